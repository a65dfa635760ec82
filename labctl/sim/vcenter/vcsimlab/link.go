package main

// The link to the lab twin: two private resources on the simulator's HTTPS listener, behind basic
// auth with the vCenter credentials (labctl.sim.vcenter.guest is the other end).
//
//	GET  /labctl/twin/events?after=SEQ&wait_ms=MS  the journal after SEQ, waiting up to MS for one
//	POST /labctl/twin/state                         the twin's state: guests, hosts, datastores and,
//	                                                every 20 lab s, the performance counters
//
// Ordering: the twin says up to which journal seq it has applied operations (ack); a VM's state
// from a push older than the VM's last power operation is ignored (and named in the answer, so the
// twin sends it again), otherwise a push taken just before a power-on would undo it.

import (
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

const (
	linkPath     = "/labctl/twin"
	maxPushBytes = 256 << 20
	maxWait      = 10 * time.Second
	choiceCancel = "0"
	choiceRetry  = "1"
)

type vmState struct {
	Name    string `json:"name"`
	Power   string `json:"power"` // "on" or "off"
	Tools   bool   `json:"tools"`
	IP      string `json:"ip"`
	Host    string `json:"host"`
	Stunned bool   `json:"stunned"`
}

type hostState struct {
	Name        string `json:"name"`
	Maintenance bool   `json:"maintenance"`
}

type datastoreState struct {
	Name          string  `json:"name"`
	CapacityBytes float64 `json:"capacity_bytes"`
	FreeBytes     float64 `json:"free_bytes"`
}

type perfPush struct {
	Boundary float64           `json:"boundary_lab_s"`
	LabT     float64           `json:"lab_time_s"`
	Stamp    float64           `json:"stamp_wall_s"`
	VM       map[string]string `json:"vm"`      // field -> base64 of little-endian float64, in VM order
	VMOn     string            `json:"vm_on"`   // base64 of one byte per VM
	VMHost   string            `json:"vm_host"` // base64 of little-endian int32 host indexes
	Host     map[string]string `json:"host"`
	HostDS   map[string]string `json:"host_datastore"` // [host*datastores + datastore]
}

type statePush struct {
	Ack          int64            `json:"ack"`
	ReportsHosts bool             `json:"reports_hosts"`
	VMs          []vmState        `json:"vms"`
	Hosts        []hostState      `json:"hosts"`
	Datastores   []datastoreState `json:"datastores"`
	Perf         *perfPush        `json:"perf"`
}

type pushAnswer struct {
	Ignored []string `json:"ignored"`
	Seq     int64    `json:"seq"`
	Samples int      `json:"samples"`
}

func (l *labState) linkHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(linkPath+"/events", l.serveEvents)
	mux.HandleFunc(linkPath+"/state", l.serveState)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(user), []byte(l.cfg.Username)) != 1 ||
			subtle.ConstantTimeCompare([]byte(pass), []byte(l.cfg.Password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="labctl twin link"`)
			http.Error(w, "the twin link needs the vCenter credentials", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		log.Printf("twin link: %v", err)
	}
}

func (l *labState) serveEvents(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	waitMS, _ := strconv.ParseInt(r.URL.Query().Get("wait_ms"), 10, 64)
	wait := min(time.Duration(waitMS)*time.Millisecond, maxWait)
	events, lost, last := l.journal.since(after, wait)
	if events == nil {
		events = []journalEvent{}
	}
	writeJSON(w, map[string]any{"events": events, "lost": lost, "last": last})
}

func (l *labState) serveState(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var push statePush
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxPushBytes))
	if err := dec.Decode(&push); err != nil {
		http.Error(w, "state: "+err.Error(), http.StatusBadRequest)
		return
	}
	var snap *snapshot
	if push.Perf != nil {
		var err error
		if snap, err = l.decodePerf(push.Perf); err != nil {
			http.Error(w, "state.perf: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	if push.ReportsHosts {
		l.mu.Lock()
		l.twinHosts = true
		l.mu.Unlock()
	}
	ctx := l.newContext(nil)
	for _, h := range push.Hosts {
		if i, ok := l.inv.hostByName[h.Name]; ok {
			host := l.inv.hosts[i]
			ctx.WithLock(host, func() { l.setMaintenance(ctx, host, h.Maintenance) })
		}
	}
	answer := pushAnswer{Ignored: []string{}}
	for _, v := range push.VMs {
		i, ok := l.inv.vmByName[v.Name]
		if !ok {
			continue
		}
		l.mu.Lock()
		stale := l.vmSeq[i] > push.Ack
		if !stale {
			l.stunned[i] = v.Stunned
		}
		l.mu.Unlock()
		if stale {
			answer.Ignored = append(answer.Ignored, v.Name)
			continue
		}
		l.applyVM(ctx, i, v)
	}
	for _, d := range push.Datastores {
		if i, ok := l.inv.dsByName[d.Name]; ok {
			l.applyDatastore(ctx, i, d)
		}
	}
	if snap != nil {
		if err := l.perf.add(snap); err != nil {
			log.Printf("twin link: %v", err)
		}
	}
	l.ack(push.Ack)
	answer.Seq = l.journal.lastSeq()
	answer.Samples = len(l.perf.view())
	writeJSON(w, answer)
}

// applyVM brings one VM to the twin's state: its host (vMotion), power (a guest that shut itself
// down), VMware Tools and IP, and the question ESXi asks when its datastore is full.
func (l *labState) applyVM(ctx *simulator.Context, i int, v vmState) {
	vm := l.inv.vms[i]
	if h, ok := l.inv.hostByName[v.Host]; ok {
		l.moveVM(ctx, vm, l.inv.hosts[h])
	}
	ctx.WithLock(vm, func() {
		on := types.VirtualMachinePowerStatePoweredOn
		switch {
		case v.Power == "off" && vm.Runtime.PowerState == on:
			l.setPower(ctx, vm, types.VirtualMachinePowerStatePoweredOff, false)
			l.postEvent(ctx, &types.VmPoweredOffEvent{VmEvent: l.vmEvent(vm)})
		case v.Power == "on" && vm.Runtime.PowerState != on:
			l.setPower(ctx, vm, on, true)
			l.postEvent(ctx, &types.VmPoweredOnEvent{VmEvent: l.vmEvent(vm)})
		}
		if vm.Runtime.PowerState != on {
			return // an off VM has no guest and asks nothing
		}
		g := vm.Guest
		up := v.Tools && !v.Stunned
		if g == nil || (g.ToolsRunningStatus == "guestToolsRunning") != up || (up && g.IpAddress != v.IP) {
			ctx.Update(vm, guestChanges(up, v.IP, v.Name))
		}
		switch q := vm.Runtime.Question; {
		case v.Stunned && q == nil:
			ctx.Update(vm, questionChanges(outOfSpaceQuestion(vm, l.inv.dsCfg[l.inv.vmDS[i]].Name)))
		case !v.Stunned && q != nil:
			ctx.Update(vm, questionChanges(nil))
		}
	})
}

func (l *labState) moveVM(ctx *simulator.Context, vm *simulator.VirtualMachine, to *simulator.HostSystem) {
	var from *simulator.HostSystem
	ctx.WithLock(vm, func() {
		if vm.Runtime.Host == nil || *vm.Runtime.Host == to.Self {
			return
		}
		if h, ok := l.inv.hostIndex[*vm.Runtime.Host]; ok {
			from = l.inv.hosts[h]
		}
		ref := to.Self
		ctx.Update(vm, []types.PropertyChange{
			{Name: "runtime.host", Val: ref},
			{Name: "summary.runtime.host", Val: ref},
		})
	})
	if from == nil {
		return
	}
	ctx.Map.RemoveReference(ctx, from, &from.Vm, vm.Self)
	ctx.Map.AddReference(ctx, to, &to.Vm, vm.Self)
	ev := l.vmEvent(vm)
	ev.Host = &types.HostEventArgument{EntityEventArgument: types.EntityEventArgument{Name: to.Name}, Host: to.Self}
	l.postEvent(ctx, &types.DrsVmMigratedEvent{VmMigratedEvent: types.VmMigratedEvent{
		VmEvent:    ev,
		SourceHost: types.HostEventArgument{EntityEventArgument: types.EntityEventArgument{Name: from.Name}, Host: from.Self},
	}})
}

var questionIDs atomic.Int64

// outOfSpaceQuestion: what ESXi asks when a VM writes to a full datastore (msg.hbacommon.outofspace).
func outOfSpaceQuestion(vm *simulator.VirtualMachine, datastore string) *types.VirtualMachineQuestionInfo {
	text := fmt.Sprintf("There is no more space for virtual disk '[%s] %s/%s.vmdk'. You might be able to "+
		"continue this session by freeing disk space on the relevant volume, and clicking Retry. Click "+
		"Cancel to terminate this session.", datastore, vm.Name, vm.Name)
	choice := func(key, label string) types.BaseElementDescription {
		return &types.ElementDescription{Description: types.Description{Label: label, Summary: label}, Key: key}
	}
	return &types.VirtualMachineQuestionInfo{
		Id:   strconv.FormatInt(questionIDs.Add(1), 10),
		Text: text,
		Choice: types.ChoiceOption{
			ChoiceInfo:   []types.BaseElementDescription{choice(choiceCancel, "Cancel"), choice(choiceRetry, "Retry")},
			DefaultIndex: 1,
		},
		Message: []types.VirtualMachineMessage{{Id: "msg.hbacommon.outofspace", Text: text}},
	}
}

// applyDatastore: capacity and free space as the twin says, and the overall status vCenter's
// default "Datastore usage on disk" alarm gives (warning from 75 % used, alert from 85 %).
func (l *labState) applyDatastore(ctx *simulator.Context, i int, d datastoreState) {
	ds := l.inv.datastores[i]
	capacity, free := int64(d.CapacityBytes), int64(math.Max(d.FreeBytes, 0))
	status := types.ManagedEntityStatusGreen
	if capacity > 0 {
		switch used := 1 - float64(free)/float64(capacity); {
		case used >= 0.85:
			status = types.ManagedEntityStatusRed
		case used >= 0.75:
			status = types.ManagedEntityStatusYellow
		}
	}
	ctx.WithLock(ds, func() {
		if ds.Summary.Capacity == capacity && ds.Summary.FreeSpace == free && ds.OverallStatus == status {
			return
		}
		info := ds.Info.GetDatastoreInfo()
		info.FreeSpace = free
		info.MaxFileSize = capacity
		ctx.Update(ds, []types.PropertyChange{
			{Name: "summary.capacity", Val: capacity},
			{Name: "summary.freeSpace", Val: free},
			{Name: "summary.accessible", Val: true},
			{Name: "overallStatus", Val: status},
		})
	})
}

// --- performance snapshots ----------------------------------------------------------------------

func decodeFloats(b64 string, n int, what string) ([]float64, error) {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(raw) != 8*n {
		return nil, fmt.Errorf("%s: %d values, expected %d", what, len(raw)/8, n)
	}
	out := make([]float64, n)
	for k := range out {
		out[k] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*k:]))
	}
	return out, nil
}

func decodeColumns(cols map[string]string, fields []string, n int, what string) ([][]float64, error) {
	out := make([][]float64, len(fields))
	for k, f := range fields {
		b64, ok := cols[f]
		if !ok {
			return nil, fmt.Errorf("%s.%s is missing", what, f)
		}
		var err error
		if out[k], err = decodeFloats(b64, n, what+"."+f); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (l *labState) decodePerf(p *perfPush) (*snapshot, error) {
	nVM, nHost, nDS := len(l.inv.vms), len(l.inv.hosts), len(l.inv.datastores)
	if math.Mod(p.Boundary, realtimeInterval) != 0 {
		return nil, fmt.Errorf("boundary %g is not a multiple of %d s", p.Boundary, realtimeInterval)
	}
	s := &snapshot{
		boundary: p.Boundary,
		labT:     p.LabT,
		stamp:    time.Unix(0, int64(p.Stamp*1e9)).UTC(),
	}
	var err error
	if s.vm, err = decodeColumns(p.VM, vmFields, nVM, "vm"); err != nil {
		return nil, err
	}
	if s.host, err = decodeColumns(p.Host, hostFields, nHost, "host"); err != nil {
		return nil, err
	}
	if s.hostDS, err = decodeColumns(p.HostDS, dsFields, nHost*nDS, "host_datastore"); err != nil {
		return nil, err
	}
	on, err := base64.StdEncoding.DecodeString(p.VMOn)
	if err != nil || len(on) != nVM {
		return nil, fmt.Errorf("vm_on: %d values, expected %d (%v)", len(on), nVM, err)
	}
	s.vmOn = make([]bool, nVM)
	for k, b := range on {
		s.vmOn[k] = b != 0
	}
	hosts, err := base64.StdEncoding.DecodeString(p.VMHost)
	if err != nil || len(hosts) != 4*nVM {
		return nil, fmt.Errorf("vm_host: %d values, expected %d (%v)", len(hosts)/4, nVM, err)
	}
	s.vmHost = make([]int32, nVM)
	for k := range s.vmHost {
		s.vmHost[k] = int32(binary.LittleEndian.Uint32(hosts[4*k:]))
	}
	return s, nil
}

func (j *journal) lastSeq() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.next - 1
}
