package main

// Power, guest and maintenance operations. The simulator's own methods are replaced through
// Map.Handler: it rewrites the receiver of these calls to one of labctl's proxy objects, which act
// on the VM or host named in the request (the simulator looks the receiver up again after the
// handler, so rewriting the reference is the way to swap it). Every operation the twin must know
// of goes into the journal the twin polls (state.go).

import (
	"log"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

var (
	vmProxyRef   = moref{Type: "LabctlVmProxy", Value: "labctl-vm"}
	dcProxyRef   = moref{Type: "LabctlDatacenterProxy", Value: "labctl-datacenter"}
	hostProxyRef = moref{Type: "LabctlHostProxy", Value: "labctl-host"}
	perfProxyRef = moref{Type: "LabctlPerfProxy", Value: "labctl-perf"}
)

type vmProxy struct{}
type dcProxy struct{}
type hostProxy struct{}
type perfProxy struct{}

func (*vmProxy) Reference() moref   { return vmProxyRef }
func (*dcProxy) Reference() moref   { return dcProxyRef }
func (*hostProxy) Reference() moref { return hostProxyRef }
func (*perfProxy) Reference() moref { return perfProxyRef }

func proxies() []mo.Reference {
	return []mo.Reference{&vmProxy{}, &dcProxy{}, &hostProxy{}, &perfProxy{}, theWaiter}
}

func handler(ctx *simulator.Context, m *simulator.Method) (mo.Reference, types.BaseMethodFault) {
	if ctx.Session == nil {
		return nil, nil // let the simulator answer NotAuthenticated
	}
	waiterHandler(ctx, m)
	switch m.Name {
	case "PowerOnVM_Task", "PowerOffVM_Task", "ResetVM_Task", "SuspendVM_Task",
		"RebootGuest", "ShutdownGuest", "StandbyGuest", "AnswerVM":
		if _, ok := ctx.Map.Get(m.This).(*simulator.VirtualMachine); ok {
			m.This = vmProxyRef
		}
	case "PowerOnMultiVM_Task":
		if m.This.Type == "Datacenter" {
			m.This = dcProxyRef
		}
	case "EnterMaintenanceMode_Task", "ExitMaintenanceMode_Task":
		if m.This.Type == "HostSystem" {
			m.This = hostProxyRef
		}
	case "QueryPerf", "QueryAvailablePerfMetric", "QueryPerfProviderSummary", "QueryPerfCounterByLevel":
		if m.This == *lab.model.ServiceContent.PerfManager {
			m.This = perfProxyRef
		}
	}
	return nil, nil
}

func notFound(ref moref) *soap.Fault {
	return simulator.Fault("", &types.ManagedObjectNotFound{Obj: ref})
}

func vmOf(ctx *simulator.Context, ref moref) *simulator.VirtualMachine {
	vm, _ := ctx.Map.Get(ref).(*simulator.VirtualMachine)
	return vm
}

// --- power tasks ----------------------------------------------------------------------------------

type powerOp struct {
	task  string // the simulator's task name (TaskInfo.name without _Task), the key of its delay
	verb  string
	paced bool // waits for its turn in a storm
}

var (
	opOn      = powerOp{"powerOn", "power on", true}
	opOff     = powerOp{"powerOff", "power off", false}
	opReset   = powerOp{"reset", "reset", true}
	opSuspend = powerOp{"suspend", "suspend", false}
)

// startPower creates the task of a power operation and starts it, at once or when the pacer
// gives it its turn (queued until then, as vCenter shows it).
func (l *labState) startPower(ctx *simulator.Context, vm *simulator.VirtualMachine, op powerOp) moref {
	tctx := l.newContext(ctx.Session)
	fail := faults.active(vm.Name)
	task := simulator.CreateTask(vm, op.task, func(*simulator.Task) (types.AnyType, types.BaseMethodFault) {
		if fail {
			log.Printf("fault vcenter_task_fails: %s on %s ends in error", op.task, vm.Name)
			return nil, taskFault(op.verb)
		}
		return nil, l.applyPower(tctx, vm, op) // runs holding the VM's lock
	})
	wait := time.Duration(0)
	if op.paced {
		wait = l.pacer.delay()
	}
	if wait <= 0 {
		return task.Run(tctx)
	}
	go func() {
		time.Sleep(wait)
		task.Run(tctx)
	}()
	return task.Self
}

func (l *labState) applyPower(ctx *simulator.Context, vm *simulator.VirtualMachine, op powerOp) types.BaseMethodFault {
	on := types.VirtualMachinePowerStatePoweredOn
	off := types.VirtualMachinePowerStatePoweredOff
	state := vm.Runtime.PowerState
	var event types.BaseEvent
	switch op {
	case opOn:
		if state == on {
			return &types.InvalidPowerState{RequestedState: on, ExistingState: state}
		}
		if l.hostInMaintenance(vm) {
			return &types.InvalidState{}
		}
		l.setPower(ctx, vm, on, true)
		event = &types.VmPoweredOnEvent{VmEvent: l.vmEvent(vm)}
	case opOff:
		if state == off {
			return &types.InvalidPowerState{RequestedState: off, ExistingState: state}
		}
		l.setPower(ctx, vm, off, false)
		event = &types.VmPoweredOffEvent{VmEvent: l.vmEvent(vm)}
	case opReset:
		if state != on {
			return &types.InvalidPowerState{RequestedState: on, ExistingState: state}
		}
		l.setPower(ctx, vm, on, true)
		event = &types.VmResettingEvent{VmEvent: l.vmEvent(vm)}
	case opSuspend:
		if state != on {
			return &types.InvalidPowerState{RequestedState: on, ExistingState: state}
		}
		l.setPower(ctx, vm, types.VirtualMachinePowerStateSuspended, false)
		event = &types.VmSuspendedEvent{VmEvent: l.vmEvent(vm)}
	}
	l.noteVM(vm, op.task)
	l.postEvent(ctx, event)
	return nil
}

func (l *labState) hostInMaintenance(vm *simulator.VirtualMachine) bool {
	if vm.Runtime.Host == nil {
		return false
	}
	h, ok := l.inv.hostIndex[*vm.Runtime.Host]
	return ok && l.inv.hosts[h].Runtime.InMaintenanceMode
}

// setPower changes a VM's power state (the caller holds its lock). A start (boot) stamps the boot
// time; every change restarts or stops the guest, so VMware Tools are down until the twin says
// the new boot has reached them.
func (l *labState) setPower(ctx *simulator.Context, vm *simulator.VirtualMachine, state types.VirtualMachinePowerState, boot bool) {
	changes := []types.PropertyChange{
		{Name: "runtime.powerState", Val: state},
		{Name: "summary.runtime.powerState", Val: state},
	}
	switch {
	case boot:
		now := time.Now()
		changes = append(changes,
			types.PropertyChange{Name: "runtime.bootTime", Val: now},
			types.PropertyChange{Name: "summary.runtime.bootTime", Val: now})
	case state == types.VirtualMachinePowerStatePoweredOff:
		changes = append(changes,
			types.PropertyChange{Name: "runtime.bootTime", Val: nil},
			types.PropertyChange{Name: "summary.runtime.bootTime", Val: nil})
	}
	changes = append(changes, guestChanges(false, "", "")...)
	if vm.Runtime.Question != nil {
		changes = append(changes, questionChanges(nil)...)
	}
	ctx.Update(vm, changes)
}

func guestChanges(up bool, ip, hostName string) []types.PropertyChange {
	running, status, state := "guestToolsNotRunning", types.VirtualMachineToolsStatusToolsNotRunning, "notRunning"
	if up {
		running, status, state = "guestToolsRunning", types.VirtualMachineToolsStatusToolsOk, "running"
	} else {
		ip, hostName = "", ""
	}
	return []types.PropertyChange{
		{Name: "guest.toolsRunningStatus", Val: running},
		{Name: "guest.toolsStatus", Val: status},
		{Name: "guest.guestState", Val: state},
		{Name: "guest.ipAddress", Val: ip},
		{Name: "guest.hostName", Val: hostName},
		{Name: "summary.guest.toolsRunningStatus", Val: running},
		{Name: "summary.guest.toolsStatus", Val: status},
		{Name: "summary.guest.ipAddress", Val: ip},
		{Name: "summary.guest.hostName", Val: hostName},
	}
}

func questionChanges(q *types.VirtualMachineQuestionInfo) []types.PropertyChange {
	var val any
	if q != nil {
		val = *q
	}
	return []types.PropertyChange{
		{Name: "runtime.question", Val: val},
		{Name: "summary.runtime.question", Val: val},
	}
}

func (l *labState) vmEvent(vm *simulator.VirtualMachine) types.VmEvent {
	ev := types.VmEvent{Event: types.Event{
		Vm: &types.VmEventArgument{EntityEventArgument: types.EntityEventArgument{Name: vm.Name}, Vm: vm.Self},
	}}
	if vm.Runtime.Host != nil {
		if h, ok := l.inv.hostIndex[*vm.Runtime.Host]; ok {
			host := l.inv.hosts[h]
			ev.Host = &types.HostEventArgument{EntityEventArgument: types.EntityEventArgument{Name: host.Name}, Host: host.Self}
			dc := l.inv.hostDC[h]
			ev.Datacenter = &types.DatacenterEventArgument{
				EntityEventArgument: types.EntityEventArgument{Name: l.inv.dcNames[dc]}, Datacenter: dc,
			}
		}
	}
	return ev
}

func (l *labState) postEvent(ctx *simulator.Context, event types.BaseEvent) {
	em := ctx.Map.EventManager()
	ctx.WithLock(em, func() { em.PostEvent(ctx, &types.PostEvent{This: em.Self, EventToPost: event}) })
}

// powerTask starts a power operation on the VM named in the request: its task, or the fault.
func powerTask(ctx *simulator.Context, this moref, op powerOp) (moref, *soap.Fault) {
	vm := vmOf(ctx, this)
	if vm == nil {
		return moref{}, notFound(this)
	}
	return lab.startPower(ctx, vm, op), nil
}

func (p *vmProxy) PowerOnVMTask(ctx *simulator.Context, req *types.PowerOnVM_Task) soap.HasFault {
	task, fault := powerTask(ctx, req.This, opOn)
	return &methods.PowerOnVM_TaskBody{Res: &types.PowerOnVM_TaskResponse{Returnval: task}, Fault_: fault}
}

func (p *vmProxy) PowerOffVMTask(ctx *simulator.Context, req *types.PowerOffVM_Task) soap.HasFault {
	task, fault := powerTask(ctx, req.This, opOff)
	return &methods.PowerOffVM_TaskBody{Res: &types.PowerOffVM_TaskResponse{Returnval: task}, Fault_: fault}
}

func (p *vmProxy) ResetVMTask(ctx *simulator.Context, req *types.ResetVM_Task) soap.HasFault {
	task, fault := powerTask(ctx, req.This, opReset)
	return &methods.ResetVM_TaskBody{Res: &types.ResetVM_TaskResponse{Returnval: task}, Fault_: fault}
}

func (p *vmProxy) SuspendVMTask(ctx *simulator.Context, req *types.SuspendVM_Task) soap.HasFault {
	task, fault := powerTask(ctx, req.This, opSuspend)
	return &methods.SuspendVM_TaskBody{Res: &types.SuspendVM_TaskResponse{Returnval: task}, Fault_: fault}
}

// PowerOnMultiVMTask: Datacenter.PowerOnMultiVM_Task, one power-on subtask per VM (each paced
// like any power-on); the batched task ends when every subtask has been started.
func (p *dcProxy) PowerOnMultiVMTask(ctx *simulator.Context, req *types.PowerOnMultiVM_Task) soap.HasFault {
	tctx := lab.newContext(ctx.Session)
	vms := append([]moref(nil), req.Vm...)
	task := simulator.CreateTask(req.This, "powerOnMultiVM", func(*simulator.Task) (types.AnyType, types.BaseMethodFault) {
		res := types.ClusterPowerOnVmResult{Attempted: []types.ClusterAttemptedVmInfo{}}
		for _, ref := range vms {
			vm := vmOf(tctx, ref)
			if vm == nil {
				res.NotAttempted = append(res.NotAttempted, types.ClusterNotAttemptedVmInfo{
					Vm: ref, Fault: types.LocalizedMethodFault{Fault: &types.ManagedObjectNotFound{Obj: ref}},
				})
				continue
			}
			sub := lab.startPower(tctx, vm, opOn)
			res.Attempted = append(res.Attempted, types.ClusterAttemptedVmInfo{Vm: ref, Task: &sub})
		}
		return res, nil
	})
	return &methods.PowerOnMultiVM_TaskBody{Res: &types.PowerOnMultiVM_TaskResponse{Returnval: task.Run(tctx)}}
}

// --- guest operations: calls without tasks, carried out by the twin's guest --------------------------

func (l *labState) guestOp(ctx *simulator.Context, vm *simulator.VirtualMachine, op string) types.BaseMethodFault {
	var fault types.BaseMethodFault
	ctx.WithLock(vm, func() {
		on := types.VirtualMachinePowerStatePoweredOn
		if vm.Runtime.PowerState != on {
			fault = &types.InvalidPowerState{RequestedState: on, ExistingState: vm.Runtime.PowerState}
			return
		}
		if vm.Guest == nil || vm.Guest.ToolsRunningStatus != "guestToolsRunning" {
			fault = new(types.ToolsUnavailable)
			return
		}
		ev := l.vmEvent(vm)
		switch op {
		case "rebootGuest":
			l.noteVM(vm, op)
			l.postEvent(ctx, &types.VmGuestRebootEvent{VmEvent: ev})
		case "shutdownGuest":
			l.noteVM(vm, op) // the twin powers it off when the guest has shut down
			l.postEvent(ctx, &types.VmGuestShutdownEvent{VmEvent: ev})
		case "standbyGuest":
			l.postEvent(ctx, &types.VmGuestStandbyEvent{VmEvent: ev})
			l.setPower(ctx, vm, types.VirtualMachinePowerStateSuspended, false)
			l.noteVM(vm, opSuspend.task)
		}
	})
	return fault
}

// guestCall: a guest operation on the VM named in the request; the SOAP fault, if any.
func guestCall(ctx *simulator.Context, this moref, op string) *soap.Fault {
	vm := vmOf(ctx, this)
	if vm == nil {
		return notFound(this)
	}
	if f := lab.guestOp(ctx, vm, op); f != nil {
		return simulator.Fault("", f)
	}
	return nil
}

func (p *vmProxy) RebootGuest(ctx *simulator.Context, req *types.RebootGuest) soap.HasFault {
	if f := guestCall(ctx, req.This, "rebootGuest"); f != nil {
		return &methods.RebootGuestBody{Fault_: f}
	}
	return &methods.RebootGuestBody{Res: new(types.RebootGuestResponse)}
}

func (p *vmProxy) ShutdownGuest(ctx *simulator.Context, req *types.ShutdownGuest) soap.HasFault {
	if f := guestCall(ctx, req.This, "shutdownGuest"); f != nil {
		return &methods.ShutdownGuestBody{Fault_: f}
	}
	return &methods.ShutdownGuestBody{Res: new(types.ShutdownGuestResponse)}
}

func (p *vmProxy) StandbyGuest(ctx *simulator.Context, req *types.StandbyGuest) soap.HasFault {
	if f := guestCall(ctx, req.This, "standbyGuest"); f != nil {
		return &methods.StandbyGuestBody{Fault_: f}
	}
	return &methods.StandbyGuestBody{Res: new(types.StandbyGuestResponse)}
}

// AnswerVM answers the question of a VM stunned by a full datastore: Cancel powers it off,
// Retry asks again while the datastore is still full (as ESXi does).
func (p *vmProxy) AnswerVM(ctx *simulator.Context, req *types.AnswerVM) soap.HasFault {
	body := new(methods.AnswerVMBody)
	vm := vmOf(ctx, req.This)
	if vm == nil {
		body.Fault_ = notFound(req.This)
		return body
	}
	ctx.WithLock(vm, func() {
		q := vm.Runtime.Question
		if q == nil || q.Id != req.QuestionId {
			body.Fault_ = simulator.Fault("", &types.InvalidArgument{InvalidProperty: "questionId"})
			return
		}
		switch req.AnswerChoice {
		case choiceCancel:
			l := lab
			l.setPower(ctx, vm, types.VirtualMachinePowerStatePoweredOff, false)
			l.noteVM(vm, opOff.task)
			l.postEvent(ctx, &types.VmPoweredOffEvent{VmEvent: l.vmEvent(vm)})
		case choiceRetry:
			i := lab.inv.vmIndex[vm.Self]
			lab.mu.Lock()
			still := lab.stunned[i]
			lab.mu.Unlock()
			var next *types.VirtualMachineQuestionInfo
			if still {
				next = outOfSpaceQuestion(vm, lab.inv.dsCfg[lab.inv.vmDS[i]].Name)
			}
			ctx.Update(vm, questionChanges(next))
		default:
			body.Fault_ = simulator.Fault("", &types.InvalidArgument{InvalidProperty: "answerChoice"})
			return
		}
		body.Res = new(types.AnswerVMResponse)
	})
	return body
}

// --- host maintenance ---------------------------------------------------------------------------------

func (p *hostProxy) EnterMaintenanceModeTask(ctx *simulator.Context, req *types.EnterMaintenanceMode_Task) soap.HasFault {
	ref, fault := lab.maintenance(ctx, req.This, true)
	if fault != nil {
		return &methods.EnterMaintenanceMode_TaskBody{Fault_: fault}
	}
	return &methods.EnterMaintenanceMode_TaskBody{Res: &types.EnterMaintenanceMode_TaskResponse{Returnval: ref}}
}

func (p *hostProxy) ExitMaintenanceModeTask(ctx *simulator.Context, req *types.ExitMaintenanceMode_Task) soap.HasFault {
	ref, fault := lab.maintenance(ctx, req.This, false)
	if fault != nil {
		return &methods.ExitMaintenanceMode_TaskBody{Fault_: fault}
	}
	return &methods.ExitMaintenanceMode_TaskBody{Res: &types.ExitMaintenanceMode_TaskResponse{Returnval: ref}}
}

// maintenance: with a twin that reports hosts, the twin moves the host's desktops (vMotion by DRS)
// and the task ends once the twin's state says so; without one the flag just changes.
func (l *labState) maintenance(ctx *simulator.Context, ref moref, on bool) (moref, *soap.Fault) {
	h, ok := l.inv.hostIndex[ref]
	if !ok {
		return moref{}, notFound(ref)
	}
	host := l.inv.hosts[h]
	tctx := l.newContext(ctx.Session)
	name, op := "enterMaintenanceMode", "enterMaintenance"
	if !on {
		name, op = "exitMaintenanceMode", "exitMaintenance"
	}
	var fault types.BaseMethodFault
	task := simulator.CreateTask(host, name, func(*simulator.Task) (types.AnyType, types.BaseMethodFault) {
		if fault != nil {
			return nil, fault
		}
		l.setMaintenance(tctx, host, on) // runs holding the host's lock
		return nil, nil
	})
	l.mu.Lock()
	viaTwin := l.twinHosts
	l.mu.Unlock()
	if !viaTwin {
		return task.Run(tctx), nil
	}
	seq := l.journal.add(journalEvent{Op: op, Host: l.inv.hostCfg[h].Name})
	timeout := time.Duration(max(l.cfg.MaintenanceTimeoutWallS, 1) * float64(time.Second))
	go func() {
		if !l.waitAck(seq, timeout) {
			fault = &types.Timedout{}
		}
		task.Run(tctx)
	}()
	return task.Self, nil
}

func (l *labState) setMaintenance(ctx *simulator.Context, host *simulator.HostSystem, on bool) {
	if host.Runtime.InMaintenanceMode == on {
		return
	}
	ctx.Update(host, []types.PropertyChange{
		{Name: "runtime.inMaintenanceMode", Val: on},
		{Name: "summary.runtime.inMaintenanceMode", Val: on},
	})
	ev := types.HostEvent{Event: types.Event{
		Host: &types.HostEventArgument{EntityEventArgument: types.EntityEventArgument{Name: host.Name}, Host: host.Self},
	}}
	if on {
		l.postEvent(ctx, &types.EnteredMaintenanceModeEvent{HostEvent: ev})
	} else {
		l.postEvent(ctx, &types.ExitMaintenanceModeEvent{HostEvent: ev})
	}
}
