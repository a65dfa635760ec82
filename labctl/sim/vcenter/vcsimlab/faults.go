package main

// Fault injection: vcenter_task_fails makes power tasks on the named VMs run (with the same
// latency) and end in the error state with a GenericVmConfigFault, as a real failed task does.

import (
	"encoding/json"
	"fmt"
	"log"
	"math/rand"
	"os"
	"sync"
	"time"

	"github.com/vmware/govmomi/vim25/types"
)

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

var faults = &faultBook{start: time.Now(), rng: rand.New(rand.NewSource(1))}

func taskFault(action string) types.BaseMethodFault {
	return &types.GenericVmConfigFault{
		Reason: fmt.Sprintf("Failed to %s the virtual machine (injected fault vcenter_task_fails)", action),
	}
}
