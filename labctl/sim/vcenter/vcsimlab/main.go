// labctl-vcsim: govmomi's vCenter simulator (v0.46.3), shaped like the lab's inventory and fed by
// the lab twin.
//
// Plain `vcsim` can only generate DC0_C0_RP0_VM0-style inventories, serves random performance
// data and leaves VMware Tools off. This program runs the same simulator library with:
//   - the inventory's topology (build.go): datacenters, clusters, ESXi hosts with their hardware,
//     the VDI datastores (shared by the hosts, named and sized as the inventory says) and thousands
//     of desktop VMs with their vCPUs, memory and disk, built in a few seconds;
//   - power tasks with realistic latency and spread (simulator.TaskDelay) that queue behind one
//     another as vCenter's task concurrency paces a storm (power.go), the vcenter_task_fails fault,
//     guest reboot / shutdown that reach the twin;
//   - a private link to the lab twin (link.go, under /labctl/twin on the same HTTPS listener,
//     basic auth with the vCenter credentials): the twin's side polls the journal of power and
//     host operations and pushes guest state, host maintenance, datastore space and, every 20 lab
//     seconds, the cumulative performance counters of every VM, host and datastore;
//   - PerformanceManager's QueryPerf answered from those counters as vCenter does (perf.go):
//     real-time 20 s samples, the counters' own keys, vCenter's units.
//
// Configuration comes from a JSON file written by labctl (mode 0600: it holds the password, which
// so never appears on a command line). When listening, the program writes a ready file (JSON) and
// then serves until SIGTERM/SIGINT. Exit status 3 means the address was already in use.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"log"
	"math/rand"
	"net"
	"net/http"
	_ "net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/vmware/govmomi/simulator"
)

type hostConfig struct {
	Name    string `json:"name"`
	Sockets int16  `json:"sockets"`
	Cores   int16  `json:"cores"`   // all sockets
	CPUMhz  int32  `json:"cpu_mhz"` // per core
	RAMMB   int64  `json:"ram_mb"`
}

type clusterConfig struct {
	Name  string       `json:"name"`
	Hosts []hostConfig `json:"hosts"`
}

type datacenterConfig struct {
	Name     string          `json:"name"`
	Clusters []clusterConfig `json:"clusters"`
}

type datastoreConfig struct {
	Name          string   `json:"name"`
	Datacenter    string   `json:"datacenter"`
	UUID          string   `json:"uuid"` // the VMFS volume id: the instance of its datastore.* counters
	CapacityBytes int64    `json:"capacity_bytes"`
	Hosts         []string `json:"hosts"`
}

type vmConfig struct {
	Name       string `json:"name"`
	Datacenter string `json:"datacenter"`
	Host       string `json:"host"`
	Datastore  string `json:"datastore"`
	CPUs       int32  `json:"cpus"`
	MemoryMB   int64  `json:"memory_mb"`
	DiskGB     int64  `json:"disk_gb"`
	GuestID    string `json:"guest_id"`
}

type faultConfig struct {
	VMs         []string `json:"vms"`
	AfterWallS  float64  `json:"after_wall_s"`
	Probability float64  `json:"probability"`
}

type config struct {
	Listen       string             `json:"listen"`
	Username     string             `json:"username"`
	Password     string             `json:"password"`
	TLSCert      string             `json:"tls_cert"`
	TLSKey       string             `json:"tls_key"`
	ReadyFile    string             `json:"ready_file"`
	DatastoreDir string             `json:"datastore_dir"`
	Datacenters  []datacenterConfig `json:"datacenters"`
	Datastores   []datastoreConfig  `json:"datastores"`
	VMs          []vmConfig         `json:"vms"`
	TaskDelayMS  map[string]int     `json:"task_delay_ms"`
	TaskJitter   float64            `json:"task_jitter"`
	// Power-ons and resets started per wall second at most (vCenter's task concurrency over the
	// task time, scaled to wall time); 0: no pacing.
	PowerOpsPerWallS float64 `json:"power_ops_per_wall_s"`
	// How long EnterMaintenanceMode waits for the twin to move the host's desktops, wall seconds.
	MaintenanceTimeoutWallS float64       `json:"maintenance_timeout_wall_s"`
	PerfSamples             int           `json:"perf_samples"` // real-time samples kept (vCenter: 180, one hour)
	Faults                  []faultConfig `json:"faults"`
	FaultsFile              string        `json:"faults_file"` // re-read when it changes: faults set at run time
	Seed                    int64         `json:"seed"`
}

type ready struct {
	State   string            `json:"state"`
	URL     string            `json:"url,omitempty"`
	Pid     int               `json:"pid"`
	Error   string            `json:"error,omitempty"`
	Kind    string            `json:"error_kind,omitempty"`
	VMs     map[string]string `json:"vms,omitempty"`
	Hosts   map[string]string `json:"hosts,omitempty"`
	Link    string            `json:"link,omitempty"`
	Seconds float64           `json:"startup_s"`
	BuildS  float64           `json:"build_s"`
}

func writeReady(path string, r ready) {
	if path == "" {
		return
	}
	data, _ := json.Marshal(r)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		log.Printf("write %s: %v", tmp, err)
		return
	}
	if err := os.Rename(tmp, path); err != nil {
		log.Printf("rename %s: %v", path, err)
	}
}

func main() {
	t0 := time.Now()
	cfgPath := flag.String("config", "", "JSON configuration written by labctl")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	if *cfgPath == "" {
		log.Fatal("-config is required")
	}
	raw, err := os.ReadFile(*cfgPath)
	if err != nil {
		log.Fatal(err)
	}
	var cfg config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		log.Fatalf("%s: %v", *cfgPath, err)
	}
	fail := func(kind string, err error, code int) {
		writeReady(cfg.ReadyFile, ready{State: "failed", Pid: os.Getpid(), Error: err.Error(), Kind: kind})
		log.Printf("%s: %v", kind, err)
		os.Exit(code)
	}

	// A taken address is an error with its own exit status (the simulator would panic instead).
	probe, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		fail("port_in_use", err, 3)
	}
	_ = probe.Close()

	faults.rng = rand.New(rand.NewSource(cfg.Seed))
	faults.set(cfg.Faults)

	model := simulator.VPX()
	model.Datacenter = 0
	model.Cluster = 0
	model.Host = 0
	model.Machine = 0
	model.Datastore = 0
	model.Portgroup = 0
	model.Autostart = false
	model.ServiceContent.About.FullName += " (govmomi simulator, labctl)"
	if err := model.Create(); err != nil {
		fail("create", err, 1)
	}
	defer model.Remove()

	// The inventory is built in memory before the server listens: no client sees it half made.
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	inv, err := build(ctx, model, &cfg)
	cancel()
	if err != nil {
		fail("topology", err, 1)
	}
	buildS := time.Since(t0).Seconds()

	lab = newLabState(&cfg, inv, model)
	if model.Service.ServeMux == nil {
		model.Service.ServeMux = http.NewServeMux()
	}
	model.Service.Handle(linkPath+"/", lab.linkHandler())

	u := &url.URL{Host: cfg.Listen}
	if cfg.Username != "" {
		u.User = url.UserPassword(cfg.Username, cfg.Password)
	}
	model.Service.Listen = u
	model.Service.TLS = new(tls.Config)
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			fail("tls", err, 1)
		}
		model.Service.TLS.Certificates = []tls.Certificate{cert}
	}

	// Task latency, pacing and faults only after the inventory is built.
	delays := map[string]int{"LockHandoff": 0}
	for k, v := range cfg.TaskDelayMS {
		delays[k] = v
	}
	simulator.TaskDelay = simulator.DelayConfig{MethodDelay: delays, DelayJitter: cfg.TaskJitter}
	faults.mu.Lock()
	faults.start = time.Now()
	faults.mu.Unlock()
	for _, p := range proxies() {
		simulator.Map.Put(p)
	}
	simulator.Map.Handler = handler
	simulator.Map.AddHandler(&changeTracker{})
	if cfg.FaultsFile != "" {
		go faults.watchFaults(cfg.FaultsFile)
	}

	server := model.Service.NewServer()
	defer server.Close()

	public := *server.URL
	public.User = nil
	vms, hosts := inv.refNames()
	writeReady(cfg.ReadyFile, ready{
		State: "ready", URL: public.String(), Pid: os.Getpid(), VMs: vms, Hosts: hosts, Link: linkPath,
		Seconds: time.Since(t0).Seconds(), BuildS: buildS,
	})
	log.Printf("listening on %s (%d VMs, %d hosts, %d datastores) in %.2fs (inventory %.2fs)",
		public.String(), len(inv.vms), len(inv.hosts), len(inv.datastores), time.Since(t0).Seconds(), buildS)

	if addr := os.Getenv("LABCTL_VCSIM_PPROF"); addr != "" { // diagnosis: go tool pprof http://ADDR/debug/pprof/profile
		go func() { log.Print(http.ListenAndServe(addr, nil)) }()
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	log.Print("stopping")
	if cfg.ReadyFile != "" {
		_ = os.Remove(cfg.ReadyFile)
	}
	if cfg.DatastoreDir != "" {
		if err := os.RemoveAll(cfg.DatastoreDir); err != nil && !errors.Is(err, os.ErrNotExist) {
			log.Print(err)
		}
	}
}
