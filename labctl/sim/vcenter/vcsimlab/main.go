// labctl-vcsim: govmomi's vCenter simulator (v0.46.3), shaped like the lab's inventory.
//
// Plain `vcsim` can only generate DC0_C0_RP0_VM0-style inventories and has no per-task jitter
// (its -delay-jitter flag reaches API-level delays only, not simulator.TaskDelay). This program
// runs the same simulator library with:
//   - the inventory's topology: datacenters, clusters (host count, CPU, RAM), ESXi hosts and VMs
//     under their inventory names, VMs powered off;
//   - realistic task latency with spread: simulator.TaskDelay keyed by task name (PowerOn,
//     PowerOff, Reset, Suspend, ...) with a coefficient of variation, and LockHandoff:0 so the
//     property collector can read the VM while its task is in flight;
//   - fault injection (vcenter_task_fails): power tasks on the named VMs run (with the same
//     latency) and end in the error state with a GenericVmConfigFault, as a real failed task does.
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
	"fmt"
	"log"
	"math/rand"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/simulator/esx"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

type clusterConfig struct {
	Name     string   `json:"name"`
	Hosts    []string `json:"hosts"`
	CPUCores int16    `json:"cpu_cores"`
	CPUMhz   int32    `json:"cpu_mhz"`
	RAMMB    int64    `json:"ram_mb"`
}

type datacenterConfig struct {
	Name     string          `json:"name"`
	Clusters []clusterConfig `json:"clusters"`
}

type vmConfig struct {
	Name       string `json:"name"`
	Datacenter string `json:"datacenter"`
	Host       string `json:"host"`
	CPUs       int32  `json:"cpus"`
	MemoryMB   int64  `json:"memory_mb"`
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
	VMs          []vmConfig         `json:"vms"`
	TaskDelayMS  map[string]int     `json:"task_delay_ms"`
	TaskJitter   float64            `json:"task_jitter"`
	Faults       []faultConfig      `json:"faults"`
	FaultsFile   string             `json:"faults_file"` // re-read when it changes: faults set at run time
	Seed         int64              `json:"seed"`
}

type ready struct {
	State   string            `json:"state"`
	URL     string            `json:"url,omitempty"`
	Pid     int               `json:"pid"`
	Error   string            `json:"error,omitempty"`
	Kind    string            `json:"error_kind,omitempty"`
	VMs     map[string]string `json:"vms,omitempty"`
	Hosts   map[string]string `json:"hosts,omitempty"`
	Seconds float64           `json:"startup_s"`
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

// --- fault injection ---------------------------------------------------------------------------

type faultBook struct {
	mu     sync.Mutex
	start  time.Time
	rng    *rand.Rand
	faults []faultConfig
}

func (fb *faultBook) active(vmName string) bool {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	elapsed := time.Since(fb.start).Seconds()
	for _, f := range fb.faults {
		if elapsed < f.AfterWallS {
			continue
		}
		for _, n := range f.VMs {
			if n == vmName {
				if f.Probability >= 1 || fb.rng.Float64() < f.Probability {
					return true
				}
			}
		}
	}
	return false
}

func (fb *faultBook) any() bool {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	return len(fb.faults) > 0
}

func (fb *faultBook) set(list []faultConfig) {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	fb.faults = list
}

// watchFaults replaces the fault list whenever the faults file changes (labctl's simulator process
// writes it when a fault is added or cleared at run time).
func (fb *faultBook) watchFaults(path string) {
	var last time.Time
	for range time.Tick(100 * time.Millisecond) {
		st, err := os.Stat(path)
		if err != nil || !st.ModTime().After(last) {
			continue
		}
		last = st.ModTime()
		raw, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var list []faultConfig
		if err := json.Unmarshal(raw, &list); err != nil {
			log.Printf("%s: %v", path, err)
			continue
		}
		fb.set(list)
		log.Printf("faults from %s: %+v", path, list)
	}
}

var faults = &faultBook{start: time.Now()}

func taskFault(action string) types.BaseMethodFault {
	return &types.GenericVmConfigFault{
		Reason: fmt.Sprintf("Failed to %s the virtual machine (injected fault vcenter_task_fails)", action),
	}
}

// The simulator looks a method's receiver up again in the caller's session after calling
// Map.Handler, so a handler cannot swap the receiver object; it can rewrite the method's target
// reference, though. Power methods on a VM under the fault are redirected to faultProxy, which
// is not an inventory entity (so no view or listing sees it) and acts on the VM named in the
// request body.
var faultProxyRef = types.ManagedObjectReference{Type: "LabctlFaultInjector", Value: "labctl-fault-injector"}

type faultProxy struct{}

func (f *faultProxy) Reference() types.ManagedObjectReference { return faultProxyRef }

// failedTask creates a task on the VM that runs (delayed by TaskDelay like any task) and then ends
// in the error state, as a real failed power task does.
func failedTask(ctx *simulator.Context, ref types.ManagedObjectReference, name, action string) types.ManagedObjectReference {
	task := simulator.CreateTask(ref, name, func(*simulator.Task) (types.AnyType, types.BaseMethodFault) {
		return nil, taskFault(action)
	})
	return task.Run(ctx)
}

func (f *faultProxy) PowerOnVMTask(ctx *simulator.Context, req *types.PowerOnVM_Task) soap.HasFault {
	return &methods.PowerOnVM_TaskBody{Res: &types.PowerOnVM_TaskResponse{Returnval: failedTask(ctx, req.This, "powerOn", "power on")}}
}

func (f *faultProxy) PowerOffVMTask(ctx *simulator.Context, req *types.PowerOffVM_Task) soap.HasFault {
	return &methods.PowerOffVM_TaskBody{Res: &types.PowerOffVM_TaskResponse{Returnval: failedTask(ctx, req.This, "powerOff", "power off")}}
}

func (f *faultProxy) ResetVMTask(ctx *simulator.Context, req *types.ResetVM_Task) soap.HasFault {
	return &methods.ResetVM_TaskBody{Res: &types.ResetVM_TaskResponse{Returnval: failedTask(ctx, req.This, "reset", "reset")}}
}

func (f *faultProxy) SuspendVMTask(ctx *simulator.Context, req *types.SuspendVM_Task) soap.HasFault {
	return &methods.SuspendVM_TaskBody{Res: &types.SuspendVM_TaskResponse{Returnval: failedTask(ctx, req.This, "suspend", "suspend")}}
}

// PowerOnMultiVMTask replaces Datacenter.PowerOnMultiVM_Task (the batched power-on a driver may
// use) so per-VM subtasks of faulty VMs fail too; otherwise it does what the simulator does.
func (f *faultProxy) PowerOnMultiVMTask(ctx *simulator.Context, req *types.PowerOnMultiVM_Task) soap.HasFault {
	task := simulator.CreateTask(req.This, "powerOnMultiVM", func(_ *simulator.Task) (types.AnyType, types.BaseMethodFault) {
		res := types.ClusterPowerOnVmResult{Attempted: []types.ClusterAttemptedVmInfo{}}
		for _, ref := range req.Vm {
			vm, ok := ctx.Map.Get(ref).(*simulator.VirtualMachine)
			if !ok {
				continue
			}
			taskCtx := &simulator.Context{Context: ctx.Context, Session: ctx.Session, Map: ctx.Map}
			var sub types.ManagedObjectReference
			if faults.active(vm.Name) {
				sub = failedTask(taskCtx, ref, "powerOn", "power on")
			} else {
				taskCtx.WithLock(vm, func() {
					body := vm.PowerOnVMTask(taskCtx, &types.PowerOnVM_Task{This: ref}).(*methods.PowerOnVM_TaskBody)
					sub = body.Res.Returnval
				})
			}
			res.Attempted = append(res.Attempted, types.ClusterAttemptedVmInfo{Vm: ref, Task: &sub})
		}
		return res, nil
	})
	return &methods.PowerOnMultiVM_TaskBody{Res: &types.PowerOnMultiVM_TaskResponse{Returnval: task.Run(ctx)}}
}

func handler(ctx *simulator.Context, m *simulator.Method) (mo.Reference, types.BaseMethodFault) {
	if ctx.Session == nil {
		return nil, nil // let the simulator answer NotAuthenticated
	}
	switch m.Name {
	case "PowerOnVM_Task", "PowerOffVM_Task", "ResetVM_Task", "SuspendVM_Task":
		vm, ok := ctx.Map.Get(m.This).(*simulator.VirtualMachine)
		if ok && faults.active(vm.Name) {
			log.Printf("fault vcenter_task_fails: %s on %s ends in error", m.Name, vm.Name)
			m.This = faultProxyRef
		}
	case "PowerOnMultiVM_Task":
		if faults.any() {
			m.This = faultProxyRef
		}
	}
	return nil, nil
}

// --- topology ----------------------------------------------------------------------------------

func setHostTemplate(c clusterConfig) {
	hw := *esx.HostSystem.Summary.Hardware
	if c.CPUCores > 0 {
		hw.NumCpuCores = c.CPUCores
		hw.NumCpuThreads = c.CPUCores * 2
		hw.NumCpuPkgs = 1
		if c.CPUCores > 8 {
			hw.NumCpuPkgs = 2
		}
	}
	if c.CPUMhz > 0 {
		hw.CpuMhz = c.CPUMhz
	}
	if c.RAMMB > 0 {
		hw.MemorySize = c.RAMMB * 1024 * 1024
	}
	esx.HostSystem.Summary.Hardware = &hw
	info := *esx.HostHardwareInfo
	info.CpuInfo.NumCpuCores = hw.NumCpuCores
	info.CpuInfo.NumCpuThreads = hw.NumCpuThreads
	info.CpuInfo.NumCpuPackages = hw.NumCpuPkgs
	info.CpuInfo.Hz = int64(hw.CpuMhz) * 1000 * 1000
	info.MemorySize = hw.MemorySize
	esx.HostHardwareInfo = &info
}

func build(ctx context.Context, c *govmomi.Client, cfg *config) (map[string]string, map[string]string, error) {
	finder := object.NewRootFolder(c.Client)
	hosts := map[string]*object.HostSystem{}
	hostDC := map[string]*object.Datacenter{}
	hostPool := map[string]*object.ResourcePool{}
	hostRefs := map[string]string{}
	for _, dcc := range cfg.Datacenters {
		dc, err := finder.CreateDatacenter(ctx, dcc.Name)
		if err != nil {
			return nil, nil, fmt.Errorf("datacenter %s: %w", dcc.Name, err)
		}
		folders, err := dc.Folders(ctx)
		if err != nil {
			return nil, nil, err
		}
		var dcHosts []*object.HostSystem
		for _, cc := range dcc.Clusters {
			cluster, err := folders.HostFolder.CreateCluster(ctx, cc.Name, types.ClusterConfigSpecEx{})
			if err != nil {
				return nil, nil, fmt.Errorf("cluster %s: %w", cc.Name, err)
			}
			setHostTemplate(cc)
			for _, hn := range cc.Hosts {
				task, err := cluster.AddHost(ctx, types.HostConnectSpec{HostName: hn}, true, nil, nil)
				if err != nil {
					return nil, nil, fmt.Errorf("host %s: %w", hn, err)
				}
				info, err := task.WaitForResult(ctx, nil)
				if err != nil {
					return nil, nil, fmt.Errorf("host %s: %w", hn, err)
				}
				ref := info.Result.(types.ManagedObjectReference)
				h := object.NewHostSystem(c.Client, ref)
				hosts[hn] = h
				hostDC[hn] = dc
				hostRefs[hn] = ref.Value
				dcHosts = append(dcHosts, h)
			}
			pool, err := cluster.ResourcePool(ctx)
			if err != nil {
				return nil, nil, err
			}
			for _, hn := range cc.Hosts {
				hostPool[hn] = pool
			}
		}
		// one local datastore per datacenter, mounted on every host (as vcsim's model does)
		if len(dcHosts) > 0 {
			dir := filepath.Join(cfg.DatastoreDir, dcc.Name)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, nil, err
			}
			for _, h := range dcHosts {
				dss, err := h.ConfigManager().DatastoreSystem(ctx)
				if err != nil {
					return nil, nil, err
				}
				if _, err := dss.CreateLocalDatastore(ctx, "LocalDS_0", dir); err != nil {
					return nil, nil, fmt.Errorf("datastore on %s: %w", h.Reference().Value, err)
				}
			}
		}
	}

	vmRefs := map[string]string{}
	for _, v := range cfg.VMs {
		h, ok := hosts[v.Host]
		if !ok {
			return nil, nil, fmt.Errorf("VM %s: unknown host %q", v.Name, v.Host)
		}
		folders, err := hostDC[v.Host].Folders(ctx)
		if err != nil {
			return nil, nil, err
		}
		spec := types.VirtualMachineConfigSpec{
			Name:     v.Name,
			GuestId:  v.GuestID,
			NumCPUs:  v.CPUs,
			MemoryMB: v.MemoryMB,
			Files:    &types.VirtualMachineFileInfo{VmPathName: "[LocalDS_0]"},
		}
		var devices object.VirtualDeviceList
		scsi, _ := devices.CreateSCSIController("pvscsi")
		disk := devices.CreateDisk(scsi.(types.BaseVirtualController), types.ManagedObjectReference{},
			"[LocalDS_0] "+v.Name+"/disk1.vmdk")
		disk.CapacityInKB = 40 * 1024 * 1024
		nic := esx.EthernetCard
		devices = append(devices, scsi, disk, &nic)
		spec.DeviceChange, _ = devices.ConfigSpec(types.VirtualDeviceConfigSpecOperationAdd)
		task, err := folders.VmFolder.CreateVM(ctx, spec, hostPool[v.Host], h)
		if err != nil {
			return nil, nil, fmt.Errorf("VM %s: %w", v.Name, err)
		}
		info, err := task.WaitForResult(ctx, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("VM %s: %w", v.Name, err)
		}
		vmRefs[v.Name] = info.Result.(types.ManagedObjectReference).Value
	}
	return vmRefs, hostRefs, nil
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
	server := model.Service.NewServer()
	defer server.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	client, err := govmomi.NewClient(ctx, server.URL, true)
	if err != nil {
		cancel()
		fail("login", err, 1)
	}
	vms, hosts, err := build(ctx, client, &cfg)
	if err != nil {
		cancel()
		fail("topology", err, 1)
	}
	_ = client.Logout(ctx)
	cancel()

	// Task latency and faults only after the inventory is built.
	delays := map[string]int{"LockHandoff": 0}
	for k, v := range cfg.TaskDelayMS {
		delays[k] = v
	}
	simulator.TaskDelay = simulator.DelayConfig{MethodDelay: delays, DelayJitter: cfg.TaskJitter}
	faults.mu.Lock()
	faults.start = time.Now()
	faults.mu.Unlock()
	simulator.Map.Put(&faultProxy{})
	simulator.Map.Handler = handler
	if cfg.FaultsFile != "" {
		go faults.watchFaults(cfg.FaultsFile)
	}

	public := *server.URL
	public.User = nil
	writeReady(cfg.ReadyFile, ready{
		State: "ready", URL: public.String(), Pid: os.Getpid(), VMs: vms, Hosts: hosts,
		Seconds: time.Since(t0).Seconds(),
	})
	log.Printf("listening on %s (%d VMs, %d hosts) in %.2fs", public.String(), len(vms), len(hosts), time.Since(t0).Seconds())

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
