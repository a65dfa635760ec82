package main

// PerformanceManager from the twin's counters, as vCenter serves real-time statistics.
//
// Every 20 lab seconds the twin's side pushes the cumulative counters of every VM, host and
// (host, datastore) pair (link.go). A sample is the difference of two consecutive snapshots over
// the lab time between them: an average over the interval, exactly how ESXi computes its 20 s
// real-time samples. Samples are stamped with the wall time of their lab boundary; a client maps
// the stamp back to the lab clock. Counter keys come from PerformanceManager.perfCounter (the
// simulator's vCenter list); values are in vCenter's units: percent in hundredths, KB, KBps, MHz,
// ms, and integers (the wire carries PerfMetricIntSeries).
//
// Served: VM and host cpu.usage / cpu.usagemhz, mem.usage / active / consumed / vmmemctl,
// net.usage / received / transmitted; per virtual disk (instance "scsi0:0") and per datastore
// (instance: the volume id) numberReadAveraged, numberWriteAveraged, totalReadLatency,
// totalWriteLatency, read, write. Other counters and entity types have no real-time data here.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

const (
	realtimeInterval = 20 // s
	diskInstance     = "scsi0:0"
)

// Cumulative counters as the twin keeps them (labctl.sim.twin.interface VmPerf / HostPerf /
// DatastorePerf field names), pushed as columns.
var vmFields = []string{
	"cpu_used_mhz_s", "mem_active_kb_s", "mem_consumed_kb_s", "mem_balloon_kb_s", "net_bytes_rx", "net_bytes_tx",
	"disk_reads", "disk_writes", "disk_bytes_read", "disk_bytes_written", "disk_read_latency_sum_s",
	"disk_write_latency_sum_s", "vcpus", "mem_configured_kb",
}
var hostFields = []string{
	"cpu_used_mhz_s", "mem_consumed_kb_s", "mem_active_kb_s", "mem_balloon_kb_s", "net_bytes_rx", "net_bytes_tx",
	"cpu_capacity_mhz", "cpu_mhz_per_core", "mem_total_kb",
}
var dsFields = []string{"reads", "writes", "bytes_read", "bytes_written", "read_latency_sum_s", "write_latency_sum_s"}

const (
	vCPU = iota
	vActive
	vConsumed
	vBalloon
	vRx
	vTx
	vReads
	vWrites
	vRBytes
	vWBytes
	vRLat
	vWLat
	vVCPUs
	vMemKB
)

const (
	hCPU = iota
	hConsumed
	hActive
	hBalloon
	hRx
	hTx
	hCapMHz
	hCoreMHz
	hMemKB
)

const (
	dReads = iota
	dWrites
	dRBytes
	dWBytes
	dRLat
	dWLat
)

// PerfMetricIntSeries is types.PerfMetricIntSeries (the XML type name comes from the Go type
// name) without omitempty on its values: the library's encoder drops every 0 of a series, and
// vCenter sends 0 for an idle counter.
type PerfMetricIntSeries struct {
	types.PerfMetricSeries

	Value []int64 `xml:"value" json:"value"`
}

type snapshot struct {
	boundary float64 // lab s, a multiple of 20
	labT     float64 // lab time the counters were read at (a little after the boundary)
	stamp    time.Time
	vm       [][]float64 // [field][vm]
	vmOn     []bool
	vmHost   []int32
	host     [][]float64 // [field][host]
	hostDS   [][]float64 // [field][host*nDS + ds]
}

// sample: the interval between two snapshots.
type sample struct {
	a, b *snapshot
	dt   float64
}

func (s *sample) rate(a, b [][]float64, f, i int) float64 {
	return (b[f][i] - a[f][i]) / s.dt
}

func (s *sample) vmRate(f, i int) float64   { return s.rate(s.a.vm, s.b.vm, f, i) }
func (s *sample) hostRate(f, h int) float64 { return s.rate(s.a.host, s.b.host, f, h) }
func (s *sample) dsRate(f, k int) float64   { return s.rate(s.a.hostDS, s.b.hostDS, f, k) }

// latencyMs: the mean latency of the I/Os completed in the interval (sum of latencies over count).
func latencyMs(sumA, sumB, nA, nB float64) float64 {
	n := nB - nA
	if n <= 0 {
		return 0
	}
	return (sumB - sumA) / n * 1000
}

func pct100(part, whole float64) float64 { // percent in hundredths, capped at 100 %
	if whole <= 0 {
		return 0
	}
	return math.Min(part/whole*10000, 10000)
}

type scope int

const (
	scopeEntity    scope = iota // instance "" only
	scopeDisk                   // a VM's virtual disk
	scopeDatastore              // a datastore seen from a VM or a host
)

// served counter: how a sample's value is computed for a VM, a host, or a host's datastore.
type served struct {
	info   types.PerfCounterInfo
	scope  scope
	vm     func(s *sample, i int) float64
	host   func(s *sample, h int) float64
	hostDS func(s *sample, k int) float64 // k = host*nDS + ds
}

type perfStore struct {
	inv   *inventory
	keep  int
	mu    sync.RWMutex
	snaps []*snapshot

	byKey  map[int32]*served
	byName map[string]*served
	order  []*served
}

func newPerfStore(inv *inventory, keep int) *perfStore {
	return &perfStore{inv: inv, keep: keep, byKey: map[int32]*served{}, byName: map[string]*served{}}
}

// define binds the served counters to this server's perfCounter list (their keys are its own).
func (ps *perfStore) define(counters []types.PerfCounterInfo) {
	byName := map[string]types.PerfCounterInfo{}
	for _, c := range counters {
		byName[fmt.Sprintf("%s.%s.%s", c.GroupInfo.GetElementDescription().Key,
			c.NameInfo.GetElementDescription().Key, c.RollupType)] = c
	}
	kb := func(f int) func(s *sample, i int) float64 {
		return func(s *sample, i int) float64 { return s.vmRate(f, i) / 1024 }
	}
	add := func(name string, sc scope, vm func(*sample, int) float64, host func(*sample, int) float64,
		hostDS func(*sample, int) float64) {
		info, ok := byName[name]
		if !ok {
			return // not in this vCenter's list: cannot be served
		}
		c := &served{info: info, scope: sc, vm: vm, host: host, hostDS: hostDS}
		ps.byKey[info.Key] = c
		ps.byName[name] = c
		ps.order = append(ps.order, c)
	}
	vmCoreMHz := func(s *sample, i int) float64 {
		h := s.b.vmHost[i]
		if h < 0 || int(h) >= len(s.b.host[hCoreMHz]) {
			return 0
		}
		return s.b.vm[vVCPUs][i] * s.b.host[hCoreMHz][h]
	}
	add("cpu.usagemhz.average", scopeEntity,
		func(s *sample, i int) float64 { return s.vmRate(vCPU, i) },
		func(s *sample, h int) float64 { return s.hostRate(hCPU, h) }, nil)
	add("cpu.usage.average", scopeEntity,
		func(s *sample, i int) float64 { return pct100(s.vmRate(vCPU, i), vmCoreMHz(s, i)) },
		func(s *sample, h int) float64 { return pct100(s.hostRate(hCPU, h), s.b.host[hCapMHz][h]) }, nil)
	add("mem.active.average", scopeEntity,
		func(s *sample, i int) float64 { return s.vmRate(vActive, i) },
		func(s *sample, h int) float64 { return s.hostRate(hActive, h) }, nil)
	add("mem.consumed.average", scopeEntity,
		func(s *sample, i int) float64 { return s.vmRate(vConsumed, i) },
		func(s *sample, h int) float64 { return s.hostRate(hConsumed, h) }, nil)
	add("mem.vmmemctl.average", scopeEntity,
		func(s *sample, i int) float64 { return s.vmRate(vBalloon, i) },
		func(s *sample, h int) float64 { return s.hostRate(hBalloon, h) }, nil)
	// a VM's mem.usage is its active memory over its configured memory; a host's, consumed over total
	add("mem.usage.average", scopeEntity,
		func(s *sample, i int) float64 { return pct100(s.vmRate(vActive, i), s.b.vm[vMemKB][i]) },
		func(s *sample, h int) float64 { return pct100(s.hostRate(hConsumed, h), s.b.host[hMemKB][h]) }, nil)
	add("net.usage.average", scopeEntity,
		func(s *sample, i int) float64 { return (s.vmRate(vRx, i) + s.vmRate(vTx, i)) / 1024 },
		func(s *sample, h int) float64 { return (s.hostRate(hRx, h) + s.hostRate(hTx, h)) / 1024 }, nil)
	add("net.received.average", scopeEntity, kb(vRx),
		func(s *sample, h int) float64 { return s.hostRate(hRx, h) / 1024 }, nil)
	add("net.transmitted.average", scopeEntity, kb(vTx),
		func(s *sample, h int) float64 { return s.hostRate(hTx, h) / 1024 }, nil)

	vmIOPS := func(f int) func(s *sample, i int) float64 {
		return func(s *sample, i int) float64 { return s.vmRate(f, i) }
	}
	vmLat := func(sum, n int) func(s *sample, i int) float64 {
		return func(s *sample, i int) float64 {
			return latencyMs(s.a.vm[sum][i], s.b.vm[sum][i], s.a.vm[n][i], s.b.vm[n][i])
		}
	}
	dsIOPS := func(f int) func(s *sample, k int) float64 {
		return func(s *sample, k int) float64 { return s.dsRate(f, k) }
	}
	dsKB := func(f int) func(s *sample, k int) float64 {
		return func(s *sample, k int) float64 { return s.dsRate(f, k) / 1024 }
	}
	dsLat := func(sum, n int) func(s *sample, k int) float64 {
		return func(s *sample, k int) float64 {
			return latencyMs(s.a.hostDS[sum][k], s.b.hostDS[sum][k], s.a.hostDS[n][k], s.b.hostDS[n][k])
		}
	}
	for _, g := range []struct {
		group string
		sc    scope
	}{{"virtualDisk", scopeDisk}, {"datastore", scopeDatastore}} {
		var hostIOPS func(int) func(*sample, int) float64
		var hostKB func(int) func(*sample, int) float64
		var hostLat func(int, int) func(*sample, int) float64
		if g.sc == scopeDatastore { // hosts have datastore counters, not virtual disks
			hostIOPS, hostKB, hostLat = dsIOPS, dsKB, dsLat
		} else {
			none := func(int) func(*sample, int) float64 { return nil }
			hostIOPS, hostKB = none, none
			hostLat = func(int, int) func(*sample, int) float64 { return nil }
		}
		add(g.group+".numberReadAveraged.average", g.sc, vmIOPS(vReads), nil, hostIOPS(dReads))
		add(g.group+".numberWriteAveraged.average", g.sc, vmIOPS(vWrites), nil, hostIOPS(dWrites))
		add(g.group+".totalReadLatency.average", g.sc, vmLat(vRLat, vReads), nil, hostLat(dRLat, dReads))
		add(g.group+".totalWriteLatency.average", g.sc, vmLat(vWLat, vWrites), nil, hostLat(dWLat, dWrites))
		add(g.group+".read.average", g.sc, kb(vRBytes), nil, hostKB(dRBytes))
		add(g.group+".write.average", g.sc, kb(vWBytes), nil, hostKB(dWBytes))
	}
}

// add stores a snapshot; boundaries a late push skipped are filled in by linear interpolation of
// the cumulative counters (so every 20 s sample exists, each the average rate over the gap).
func (ps *perfStore) add(s *snapshot) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if n := len(ps.snaps); n > 0 {
		last := ps.snaps[n-1]
		switch {
		case s.boundary <= last.boundary:
			return nil // a repeat: the first reading of a boundary stands
		case s.labT <= last.labT:
			return fmt.Errorf("snapshot of boundary %.0f read at lab %.3f, before the previous one (%.3f)",
				s.boundary, s.labT, last.labT)
		case s.boundary-last.boundary > float64(ps.keep+1)*realtimeInterval:
			ps.snaps = nil // a gap longer than the history: start again
		default:
			for b := last.boundary + realtimeInterval; b < s.boundary-1e-6; b += realtimeInterval {
				ps.snaps = append(ps.snaps, interpolate(last, s, b))
			}
		}
	}
	ps.snaps = append(ps.snaps, s)
	if extra := len(ps.snaps) - (ps.keep + 1); extra > 0 {
		ps.snaps = append([]*snapshot(nil), ps.snaps[extra:]...)
	}
	return nil
}

func interpolate(a, b *snapshot, boundary float64) *snapshot {
	f := (boundary - a.labT) / (b.labT - a.labT)
	mix := func(x, y [][]float64) [][]float64 {
		out := make([][]float64, len(x))
		for k := range x {
			out[k] = make([]float64, len(x[k]))
			for i := range x[k] {
				out[k][i] = x[k][i] + (y[k][i]-x[k][i])*f
			}
		}
		return out
	}
	g := (boundary - a.boundary) / (b.boundary - a.boundary)
	return &snapshot{
		boundary: boundary,
		labT:     boundary,
		stamp:    a.stamp.Add(time.Duration(float64(b.stamp.Sub(a.stamp)) * g)),
		vm:       mix(a.vm, b.vm),
		vmOn:     b.vmOn,
		vmHost:   b.vmHost,
		host:     mix(a.host, b.host),
		hostDS:   mix(a.hostDS, b.hostDS),
	}
}

func (ps *perfStore) view() []*snapshot {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return ps.snaps
}

type metricRef struct {
	c        *served
	instance string
	index    int // datastore index for scopeDatastore
}

// instances of a served counter for one entity: "" for whole-entity counters, the disk for a
// VM's virtual disk, the volume id of each datastore the VM lives on or the host mounts.
func (ps *perfStore) instances(c *served, isVM bool, i int) []metricRef {
	switch c.scope {
	case scopeEntity:
		return []metricRef{{c, "", -1}}
	case scopeDisk:
		if isVM {
			return []metricRef{{c, diskInstance, -1}}
		}
	case scopeDatastore:
		if isVM {
			d := ps.inv.vmDS[i]
			return []metricRef{{c, ps.inv.dsCfg[d].UUID, d}}
		}
		out := make([]metricRef, 0, len(ps.inv.hostDS[i]))
		for _, d := range ps.inv.hostDS[i] {
			out = append(out, metricRef{c, ps.inv.dsCfg[d].UUID, d})
		}
		return out
	}
	return nil
}

func (ps *perfStore) servesFor(c *served, isVM bool) bool {
	if isVM {
		return c.vm != nil
	}
	return c.host != nil || c.hostDS != nil
}

// metrics resolves a query's metric ids: "" is the entity aggregate, "*" every instance.
func (ps *perfStore) metrics(ids []types.PerfMetricId, isVM bool, i int) []metricRef {
	var out []metricRef
	if len(ids) == 0 {
		for _, c := range ps.order {
			if ps.servesFor(c, isVM) {
				out = append(out, ps.instances(c, isVM, i)...)
			}
		}
		return out
	}
	for _, id := range ids {
		c, ok := ps.byKey[id.CounterId]
		if !ok || !ps.servesFor(c, isVM) {
			continue
		}
		for _, m := range ps.instances(c, isVM, i) {
			if id.Instance == "*" || id.Instance == m.instance {
				out = append(out, m)
			}
		}
	}
	return out
}

func (ps *perfStore) value(m metricRef, s *sample, isVM bool, i int) int64 {
	var v float64
	switch {
	case isVM:
		v = m.c.vm(s, i)
	case m.c.scope == scopeDatastore:
		v = m.c.hostDS(s, i*len(ps.inv.datastores)+m.index)
	default:
		v = m.c.host(s, i)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return -1
	}
	return int64(math.Round(math.Max(v, 0)))
}

// entity: a VM's or a host's index; ok is false for anything else (no real-time statistics).
func (ps *perfStore) entity(ref moref) (i int, isVM, ok bool) {
	switch ref.Type {
	case "VirtualMachine":
		i, ok = ps.inv.vmIndex[ref]
		return i, true, ok
	case "HostSystem":
		i, ok = ps.inv.hostIndex[ref]
	}
	return i, false, ok
}

// query answers one PerfQuerySpec; nil when the entity has no real-time data in the window.
func (ps *perfStore) query(snaps []*snapshot, qs types.PerfQuerySpec) (types.BasePerfEntityMetricBase, types.BaseMethodFault) {
	i, isVM, ok := ps.entity(qs.Entity)
	if !ok {
		return nil, nil // no real-time statistics for this entity
	}
	interval := qs.IntervalId
	if interval <= 0 {
		interval = realtimeInterval
	}
	if interval%realtimeInterval != 0 {
		return nil, &types.InvalidArgument{InvalidProperty: "querySpec.interval"}
	}
	step := int(interval / realtimeInterval)
	var picked []sample
	for j := len(snaps) - 1; j >= step; j-- {
		b, a := snaps[j], snaps[j-step]
		if math.Mod(b.boundary, float64(interval)) > 1e-6 || b.boundary-a.boundary > float64(interval)+1e-6 {
			continue
		}
		if qs.EndTime != nil && b.stamp.After(*qs.EndTime) {
			continue
		}
		if qs.StartTime != nil && !b.stamp.After(*qs.StartTime) {
			break
		}
		if isVM && !b.vmOn[i] {
			continue // a VM that is off has no real-time statistics
		}
		picked = append(picked, sample{a, b, b.labT - a.labT})
		if qs.MaxSample > 0 && len(picked) >= int(qs.MaxSample) {
			break
		}
	}
	if len(picked) == 0 {
		return nil, nil
	}
	for l, r := 0, len(picked)-1; l < r; l, r = l+1, r-1 {
		picked[l], picked[r] = picked[r], picked[l]
	}
	refs := ps.metrics(qs.MetricId, isVM, i)
	info := make([]types.PerfSampleInfo, len(picked))
	for k, s := range picked {
		info[k] = types.PerfSampleInfo{Timestamp: s.b.stamp, Interval: interval}
	}
	series := make([][]int64, len(refs))
	for m, ref := range refs {
		series[m] = make([]int64, len(picked))
		for k := range picked {
			series[m][k] = ps.value(ref, &picked[k], isVM, i)
		}
	}
	if qs.Format == string(types.PerfFormatCsv) {
		out := &types.PerfEntityMetricCSV{PerfEntityMetricBase: types.PerfEntityMetricBase{Entity: qs.Entity}}
		parts := make([]string, 0, 2*len(info))
		for _, s := range info {
			parts = append(parts, strconv.Itoa(int(s.Interval)), s.Timestamp.UTC().Format(time.RFC3339))
		}
		out.SampleInfoCSV = strings.Join(parts, ",")
		for m, ref := range refs {
			vals := make([]string, len(series[m]))
			for k, v := range series[m] {
				vals[k] = strconv.FormatInt(v, 10)
			}
			out.Value = append(out.Value, types.PerfMetricSeriesCSV{
				PerfMetricSeries: types.PerfMetricSeries{Id: types.PerfMetricId{CounterId: ref.c.info.Key, Instance: ref.instance}},
				Value:            strings.Join(vals, ","),
			})
		}
		return out, nil
	}
	out := &types.PerfEntityMetric{PerfEntityMetricBase: types.PerfEntityMetricBase{Entity: qs.Entity}, SampleInfo: info}
	for m, ref := range refs {
		out.Value = append(out.Value, &PerfMetricIntSeries{
			PerfMetricSeries: types.PerfMetricSeries{Id: types.PerfMetricId{CounterId: ref.c.info.Key, Instance: ref.instance}},
			Value:            series[m],
		})
	}
	return out, nil
}

func (p *perfProxy) QueryPerf(ctx *simulator.Context, req *types.QueryPerf) soap.HasFault {
	body := &methods.QueryPerfBody{Res: &types.QueryPerfResponse{}}
	ps := lab.perf
	snaps := ps.view()
	for _, qs := range req.QuerySpec {
		res, fault := ps.query(snaps, qs)
		if fault != nil {
			return &methods.QueryPerfBody{Fault_: simulator.Fault("", fault)}
		}
		if res != nil {
			body.Res.Returnval = append(body.Res.Returnval, res)
		}
	}
	return body
}

func (p *perfProxy) QueryAvailablePerfMetric(ctx *simulator.Context, req *types.QueryAvailablePerfMetric) soap.HasFault {
	body := &methods.QueryAvailablePerfMetricBody{Res: &types.QueryAvailablePerfMetricResponse{}}
	ps := lab.perf
	i, isVM, ok := ps.entity(req.Entity)
	if !ok {
		return body
	}
	for _, m := range ps.metrics(nil, isVM, i) {
		body.Res.Returnval = append(body.Res.Returnval, types.PerfMetricId{CounterId: m.c.info.Key, Instance: m.instance})
	}
	return body
}

func (p *perfProxy) QueryPerfProviderSummary(ctx *simulator.Context, req *types.QueryPerfProviderSummary) soap.HasFault {
	body := &methods.QueryPerfProviderSummaryBody{}
	if ctx.Map.Get(req.Entity) == nil {
		body.Fault_ = simulator.Fault("", &types.InvalidArgument{InvalidProperty: "entity"})
		return body
	}
	summary := types.PerfProviderSummary{Entity: req.Entity, SummarySupported: true, RefreshRate: -1}
	switch req.Entity.Type {
	case "VirtualMachine", "HostSystem":
		summary.CurrentSupported = true
		summary.RefreshRate = realtimeInterval
	}
	body.Res = &types.QueryPerfProviderSummaryResponse{Returnval: summary}
	return body
}

func (p *perfProxy) QueryPerfCounterByLevel(ctx *simulator.Context, req *types.QueryPerfCounterByLevel) soap.HasFault {
	body := &methods.QueryPerfCounterByLevelBody{}
	if req.Level < 1 || req.Level > 4 {
		body.Fault_ = simulator.Fault("", &types.InvalidArgument{InvalidProperty: "level"})
		return body
	}
	pm := ctx.Map.Get(*lab.model.ServiceContent.PerfManager).(*simulator.PerformanceManager)
	res := &types.QueryPerfCounterByLevelResponse{}
	for _, c := range pm.PerfCounter {
		if c.Level <= req.Level {
			res.Returnval = append(res.Returnval, c)
		}
	}
	body.Res = res
	return body
}
