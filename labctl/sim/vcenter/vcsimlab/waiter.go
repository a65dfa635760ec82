package main

// WaitForUpdatesEx that scales to filters over thousands of objects.
//
// The simulator's own implementation re-collects every object of every filter (with an XML
// round trip per value) for each change anywhere in the inventory: a filter over 3,000 power-on
// tasks during a storm of 3,000 power-ons is ~10^7 object collections, and the call never
// returns. A real vCenter sends only the changed properties of the changed objects, which is what
// clients such as labctl's driver and govc rely on. This replacement keeps, per property
// collector and filter, the objects it has reported and the values it sent, and on each change
// re-reads only the changed objects (one small RetrieveProperties each), re-walking a filter's
// traversal (a ContainerView, say) only when an object of a type it selects enters or leaves the
// inventory, or when one of its root objects changes.

import (
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

var waiterRef = moref{Type: "LabctlWaiter", Value: "labctl-waiter"}

const (
	waitBatch = 20 * time.Millisecond // let changes that come together go out together
	// Changes kept for a collector nobody waits on; past this its filters are re-walked instead
	// (a client that creates collectors and never destroys them must not grow the simulator).
	maxDirty = 50_000
)

// waiter: the SOAP receiver of WaitForUpdates(Ex) calls; it acts on the collector named in the
// request. Like the simulator's PropertyCollector it opts out of the per-object lock (calls wait).
type waiter struct {
	mu     sync.Mutex
	states map[string]*pcState // by session key + collector
}

func (*waiter) Reference() moref { return waiterRef }
func (*waiter) Lock()            {}
func (*waiter) Unlock()          {}

var theWaiter = &waiter{states: map[string]*pcState{}}

type pcState struct {
	waiting  sync.Mutex // one wait at a time per collector
	mu       sync.Mutex
	dirty    map[moref]struct{}
	entered  map[string]bool // object types that entered or left the inventory
	overflow bool            // too many changes kept: re-walk every filter
	notify   chan struct{}
	cancel   chan struct{}
	filters  map[moref]*filterState
	version  int64
}

type filterState struct {
	spec      types.PropertyFilterSpec
	traversal bool
	roots     map[moref]bool
	types     map[string]bool
	objects   map[moref]map[string]types.AnyType // what this filter has reported
}

func stateKey(ctx *simulator.Context, pc moref) string {
	key := ""
	if ctx.Session != nil {
		key = ctx.Session.Key
	}
	return key + "/" + pc.Value
}

func (w *waiter) state(ctx *simulator.Context, pc moref) *pcState {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := stateKey(ctx, pc)
	st, ok := w.states[k]
	if !ok {
		st = &pcState{
			dirty: map[moref]struct{}{}, entered: map[string]bool{}, notify: make(chan struct{}, 1),
			cancel: make(chan struct{}, 1), filters: map[moref]*filterState{},
		}
		w.states[k] = st
	}
	return st
}

func (w *waiter) drop(ctx *simulator.Context, pc moref) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.states, stateKey(ctx, pc))
}

func (w *waiter) all() []*pcState {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*pcState, 0, len(w.states))
	for _, st := range w.states {
		out = append(out, st)
	}
	return out
}

// --- change tracking (a Registry handler: told of every object created, changed, removed) ----------

type changeTracker struct{}

var trackerRef = moref{Type: "LabctlChangeTracker", Value: "labctl-change-tracker"}

func (*changeTracker) Reference() moref { return trackerRef }

func (*changeTracker) PutObject(o mo.Reference) {
	ref := o.Reference()
	for _, st := range theWaiter.all() {
		st.mark(ref, true)
	}
}

func (*changeTracker) UpdateObject(_ *simulator.Context, o mo.Reference, _ []types.PropertyChange) {
	ref := o.Reference()
	for _, st := range theWaiter.all() {
		st.mark(ref, false)
	}
}

func (*changeTracker) RemoveObject(_ *simulator.Context, ref moref) {
	for _, st := range theWaiter.all() {
		st.mark(ref, true)
	}
}

func (st *pcState) mark(ref moref, structural bool) {
	st.mu.Lock()
	if len(st.dirty) >= maxDirty {
		st.overflow = true
		st.dirty = map[moref]struct{}{}
	}
	st.dirty[ref] = struct{}{}
	if structural {
		st.entered[ref.Type] = true
	}
	st.mu.Unlock()
	select {
	case st.notify <- struct{}{}:
	default:
	}
}

func (st *pcState) take() (map[moref]struct{}, map[string]bool, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	d, e, o := st.dirty, st.entered, st.overflow
	st.dirty, st.entered, st.overflow = map[moref]struct{}{}, map[string]bool{}, false
	return d, e, o
}

// --- collecting ------------------------------------------------------------------------------

func newFilterState(spec types.PropertyFilterSpec) *filterState {
	fs := &filterState{spec: spec, roots: map[moref]bool{}, types: map[string]bool{}, objects: map[moref]map[string]types.AnyType{}}
	for _, o := range spec.ObjectSet {
		fs.roots[o.Obj] = true
		if len(o.SelectSet) > 0 {
			fs.traversal = true
		}
	}
	for _, p := range spec.PropSet {
		fs.types[p.Type] = true
	}
	return fs
}

func retrieve(ctx *simulator.Context, pc *simulator.PropertyCollector, spec types.PropertyFilterSpec) []types.ObjectContent {
	spec.ReportMissingObjectsInResults = types.NewBool(true) // an object may be gone since
	res := pc.RetrieveProperties(ctx, &types.RetrieveProperties{This: pc.Self, SpecSet: []types.PropertyFilterSpec{spec}})
	body, ok := res.(*methods.RetrievePropertiesBody)
	if !ok || body.Res == nil {
		return nil
	}
	return body.Res.Returnval
}

func props(oc types.ObjectContent) map[string]types.AnyType {
	out := make(map[string]types.AnyType, len(oc.PropSet))
	for _, p := range oc.PropSet {
		out[p.Name] = p.Val
	}
	return out
}

func changesOf(old, cur map[string]types.AnyType) []types.PropertyChange {
	var out []types.PropertyChange
	for name, v := range cur {
		if prev, ok := old[name]; !ok || !reflect.DeepEqual(prev, v) {
			out = append(out, types.PropertyChange{Name: name, Op: types.PropertyChangeOpAssign, Val: v})
		}
	}
	for name := range old {
		if _, ok := cur[name]; !ok {
			out = append(out, types.PropertyChange{Name: name, Op: types.PropertyChangeOpRemove})
		}
	}
	return out
}

// full re-walks a filter: objects that entered, changed or left since it last reported.
func (fs *filterState) full(ctx *simulator.Context, pc *simulator.PropertyCollector) []types.ObjectUpdate {
	var out []types.ObjectUpdate
	seen := map[moref]bool{}
	for _, oc := range retrieve(ctx, pc, fs.spec) {
		seen[oc.Obj] = true
		cur := props(oc)
		old, known := fs.objects[oc.Obj]
		fs.objects[oc.Obj] = cur
		if !known {
			out = append(out, types.ObjectUpdate{Obj: oc.Obj, Kind: types.ObjectUpdateKindEnter, ChangeSet: changesOf(nil, cur)})
		} else if ch := changesOf(old, cur); len(ch) > 0 {
			out = append(out, types.ObjectUpdate{Obj: oc.Obj, Kind: types.ObjectUpdateKindModify, ChangeSet: ch})
		}
	}
	for ref := range fs.objects {
		if !seen[ref] {
			delete(fs.objects, ref)
			out = append(out, types.ObjectUpdate{Obj: ref, Kind: types.ObjectUpdateKindLeave})
		}
	}
	return out
}

// one re-reads one reported object with the filter's properties.
func (fs *filterState) one(ctx *simulator.Context, pc *simulator.PropertyCollector, ref moref) *types.ObjectUpdate {
	spec := types.PropertyFilterSpec{ObjectSet: []types.ObjectSpec{{Obj: ref}}, PropSet: fs.spec.PropSet}
	got := retrieve(ctx, pc, spec)
	if len(got) == 0 { // gone
		delete(fs.objects, ref)
		return &types.ObjectUpdate{Obj: ref, Kind: types.ObjectUpdateKindLeave}
	}
	cur := props(got[0])
	ch := changesOf(fs.objects[ref], cur)
	fs.objects[ref] = cur
	if len(ch) == 0 {
		return nil
	}
	return &types.ObjectUpdate{Obj: ref, Kind: types.ObjectUpdateKindModify, ChangeSet: ch}
}

// updates: what changed for every filter of the collector.
func (st *pcState) updates(ctx *simulator.Context, pc *simulator.PropertyCollector) []types.PropertyFilterUpdate {
	dirty, entered, overflow := st.take()
	var out []types.PropertyFilterUpdate
	live := map[moref]bool{}
	for _, fref := range pc.Filter {
		live[fref] = true
		f, ok := ctx.Session.Get(fref).(*simulator.PropertyFilter)
		if !ok {
			continue
		}
		fs, known := st.filters[fref]
		if !known {
			fs = newFilterState(f.Spec)
			st.filters[fref] = fs
		}
		var objs []types.ObjectUpdate
		rewalk := !known || overflow
		if fs.traversal {
			for t := range entered {
				if fs.types[t] {
					rewalk = true
				}
			}
			for r := range fs.roots {
				if _, ok := dirty[r]; ok {
					rewalk = true
				}
			}
		}
		if rewalk {
			objs = fs.full(ctx, pc)
		} else {
			for ref := range dirty {
				if _, ok := fs.objects[ref]; ok {
					if u := fs.one(ctx, pc, ref); u != nil {
						objs = append(objs, *u)
					}
				}
			}
		}
		if len(objs) > 0 {
			out = append(out, types.PropertyFilterUpdate{Filter: fref, ObjectSet: objs})
		}
	}
	for fref := range st.filters {
		if !live[fref] {
			delete(st.filters, fref)
		}
	}
	return out
}

func (w *waiter) wait(ctx *simulator.Context, this moref, version string, maxWait *int32) (*types.UpdateSet, *soap.Fault) {
	pc, ok := ctx.Session.Get(this).(*simulator.PropertyCollector)
	if !ok {
		return nil, notFound(this)
	}
	st := w.state(ctx, this)
	st.waiting.Lock()
	defer st.waiting.Unlock()
	select {
	case <-st.cancel: // a cancel of an earlier wait
	default:
	}
	if version == "" { // a fresh start: report everything again
		st.filters = map[moref]*filterState{}
	}
	var deadline <-chan time.Time
	once := false
	if maxWait != nil {
		if *maxWait <= 0 {
			once = true
		} else {
			t := time.NewTimer(time.Duration(*maxWait) * time.Second)
			defer t.Stop()
			deadline = t.C
		}
	}
	for {
		if fu := st.updates(ctx, pc); len(fu) > 0 {
			st.version++
			return &types.UpdateSet{Version: strconv.FormatInt(st.version, 10), FilterSet: fu}, nil
		}
		if once {
			return nil, nil
		}
		select {
		case <-st.notify:
			time.Sleep(waitBatch)
		case <-st.cancel:
			return nil, simulator.Fault("", new(types.RequestCanceled))
		case <-deadline:
			return nil, nil
		}
	}
}

func (w *waiter) WaitForUpdatesEx(ctx *simulator.Context, req *types.WaitForUpdatesEx) soap.HasFault {
	var maxWait *int32
	if req.Options != nil {
		maxWait = req.Options.MaxWaitSeconds
	}
	set, fault := w.wait(ctx, req.This, req.Version, maxWait)
	if fault != nil {
		return &methods.WaitForUpdatesExBody{Fault_: fault}
	}
	return &methods.WaitForUpdatesExBody{Res: &types.WaitForUpdatesExResponse{Returnval: set}}
}

func (w *waiter) WaitForUpdates(ctx *simulator.Context, req *types.WaitForUpdates) soap.HasFault {
	set, fault := w.wait(ctx, req.This, req.Version, nil)
	if fault != nil || set == nil {
		return &methods.WaitForUpdatesBody{Fault_: fault}
	}
	return &methods.WaitForUpdatesBody{Res: &types.WaitForUpdatesResponse{Returnval: *set}}
}

// waiterHandler routes a collector's waits to the waiter, and tells it of cancels and destroys
// (which the collector itself then carries out as usual).
func waiterHandler(ctx *simulator.Context, m *simulator.Method) {
	if m.This.Type != "PropertyCollector" {
		return
	}
	switch m.Name {
	case "WaitForUpdatesEx", "WaitForUpdates":
		m.This = waiterRef
	case "CancelWaitForUpdates":
		select {
		case theWaiter.state(ctx, m.This).cancel <- struct{}{}:
		default:
		}
	case "DestroyPropertyCollector":
		st := theWaiter.state(ctx, m.This)
		select {
		case st.cancel <- struct{}{}:
		default:
		}
		theWaiter.drop(ctx, m.This)
	}
}
