package main

// The lab's side of the simulator: the journal of operations the twin must hear about, the pacing
// of power operations, and what the twin last told us.

import (
	"context"
	"sync"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

var lab *labState

type labState struct {
	cfg     *config
	inv     *inventory
	model   *simulator.Model
	journal *journal
	pacer   *pacer
	perf    *perfStore
	session *simulator.Session // the internal user of changes the twin makes (guest shutdown, vMotion)

	mu        sync.Mutex
	vmSeq     []int64 // journal seq of each VM's last power operation
	stunned   []bool  // as the twin last said
	acked     int64   // journal seq the twin has applied
	ackNotify chan struct{}
	twinHosts bool // the twin reports hosts: maintenance goes through it
	pushes    int64
}

func newLabState(cfg *config, inv *inventory, model *simulator.Model) *labState {
	gap := time.Duration(0)
	if cfg.PowerOpsPerWallS > 0 {
		gap = time.Duration(float64(time.Second) / cfg.PowerOpsPerWallS)
	}
	keep := cfg.PerfSamples
	if keep <= 0 {
		keep = 180
	}
	l := &labState{
		cfg:     cfg,
		inv:     inv,
		model:   model,
		journal: newJournal(),
		pacer:   &pacer{gap: gap},
		perf:    newPerfStore(inv, keep),
		session: &simulator.Session{
			UserSession: types.UserSession{Key: "labctl-twin", UserName: "VSPHERE.LOCAL\\vpxd-extension"},
			Registry:    simulator.NewRegistry(),
		},
		vmSeq:     make([]int64, len(inv.vms)),
		stunned:   make([]bool, len(inv.vms)),
		ackNotify: make(chan struct{}),
	}
	pm := simulator.Map.Get(*model.ServiceContent.PerfManager).(*simulator.PerformanceManager)
	l.perf.define(pm.PerfCounter)
	return l
}

// newContext: a context of its own (the simulator's locks are re-entrant per context, so two
// goroutines must never share one), acting for session or, if nil, the twin.
func (l *labState) newContext(session *simulator.Session) *simulator.Context {
	if session == nil {
		session = l.session
	}
	return &simulator.Context{Context: context.Background(), Session: session, Map: simulator.Map}
}

// noteVM records an operation on a VM the twin must apply.
func (l *labState) noteVM(vm *simulator.VirtualMachine, op string) {
	i, ok := l.inv.vmIndex[vm.Self]
	if !ok {
		return
	}
	seq := l.journal.add(journalEvent{Op: op, VM: l.inv.vmCfg[i].Name})
	l.mu.Lock()
	l.vmSeq[i] = seq
	l.mu.Unlock()
}

// ack: the twin has applied the journal up to seq.
func (l *labState) ack(seq int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pushes++
	if seq > l.acked {
		l.acked = seq
		close(l.ackNotify)
		l.ackNotify = make(chan struct{})
	}
}

// waitAck waits until the twin has applied the journal up to seq.
func (l *labState) waitAck(seq int64, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		done, ch := l.acked >= seq, l.ackNotify
		l.mu.Unlock()
		if done {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return false
		}
	}
}

// --- journal --------------------------------------------------------------------------------------

type journalEvent struct {
	Seq  int64  `json:"seq"`
	Op   string `json:"op"` // powerOn, powerOff, reset, suspend, rebootGuest, shutdownGuest, enterMaintenance, exitMaintenance
	VM   string `json:"vm,omitempty"`
	Host string `json:"host,omitempty"`
}

const journalKeep = 200_000 // events kept for a twin that fell behind (a 3,000-desktop storm makes ~6,000)

type journal struct {
	mu     sync.Mutex
	events []journalEvent
	next   int64
	notify chan struct{}
}

func newJournal() *journal { return &journal{next: 1, notify: make(chan struct{})} }

func (j *journal) add(e journalEvent) int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	e.Seq = j.next
	j.next++
	j.events = append(j.events, e)
	if len(j.events) > journalKeep {
		j.events = append([]journalEvent(nil), j.events[len(j.events)-journalKeep/2:]...)
	}
	close(j.notify)
	j.notify = make(chan struct{})
	return e.Seq
}

// since returns the events after after, waiting up to wait for one; lost is true when
// some were dropped before the caller read them.
func (j *journal) since(after int64, wait time.Duration) (out []journalEvent, lost bool, last int64) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		j.mu.Lock()
		last = j.next - 1
		if last > after {
			first := int64(0)
			if len(j.events) > 0 {
				first = j.events[0].Seq
			}
			lost = first > after+1
			k := 0
			if !lost {
				k = int(after + 1 - first)
			}
			out = append([]journalEvent(nil), j.events[k:]...)
			j.mu.Unlock()
			return out, lost, last
		}
		ch := j.notify
		j.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return nil, false, last
		}
	}
}

// --- pacing -------------------------------------------------------------------------------------

// pacer: power-ons and resets start one every gap, as vCenter works through a storm's queue of
// power tasks (its task concurrency over the task time); a task waits in the queued state.
type pacer struct {
	mu   sync.Mutex
	gap  time.Duration
	next time.Time
}

func (p *pacer) delay() time.Duration {
	if p.gap <= 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if p.next.Before(now) {
		p.next = now
	}
	d := p.next.Sub(now)
	p.next = p.next.Add(p.gap)
	return d
}
