package main

// The inventory: datacenters, clusters and hosts through an in-memory client (a few dozen calls),
// the VMs by calling the simulator's Folder.CreateVMTask directly (no SOAP encoding or property
// collector per VM: 3,000 desktops take seconds, not minutes).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/simulator/esx"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

type moref = types.ManagedObjectReference

// inventory: the simulator's objects in the configuration's order, with indexes both ways. The
// twin link and the performance counters address VMs, hosts and datastores by these indexes.
type inventory struct {
	vms        []*simulator.VirtualMachine
	vmCfg      []vmConfig
	vmIndex    map[moref]int
	vmByName   map[string]int
	vmDS       []int // each VM's datastore
	hosts      []*simulator.HostSystem
	hostCfg    []hostConfig
	hostIndex  map[moref]int
	hostByName map[string]int
	hostDS     [][]int // datastores mounted on each host
	hostDC     []moref
	datastores []*simulator.Datastore
	dsCfg      []datastoreConfig
	dsIndex    map[moref]int
	dsByName   map[string]int
	dcNames    map[moref]string
}

func (inv *inventory) refNames() (map[string]string, map[string]string) {
	vms := make(map[string]string, len(inv.vms))
	for i, vm := range inv.vms {
		vms[inv.vmCfg[i].Name] = vm.Self.Value
	}
	hosts := make(map[string]string, len(inv.hosts))
	for i, h := range inv.hosts {
		hosts[inv.hostCfg[i].Name] = h.Self.Value
	}
	return vms, hosts
}

// setHostTemplate shapes the next host the simulator adds (it copies esx.HostSystem).
func setHostTemplate(h hostConfig) {
	hw := *esx.HostSystem.Summary.Hardware
	if h.Cores > 0 {
		hw.NumCpuCores = h.Cores
		hw.NumCpuThreads = h.Cores * 2 // hyper-threading, as on the papers' Xeons
		hw.NumCpuPkgs = max(h.Sockets, 1)
	}
	if h.CPUMhz > 0 {
		hw.CpuMhz = h.CPUMhz
	}
	if h.RAMMB > 0 {
		hw.MemorySize = h.RAMMB * 1024 * 1024
	}
	esx.HostSystem.Summary.Hardware = &hw
	info := *esx.HostHardwareInfo
	cpu := info.CpuInfo
	cpu.NumCpuCores = hw.NumCpuCores
	cpu.NumCpuThreads = hw.NumCpuThreads
	cpu.NumCpuPackages = hw.NumCpuPkgs
	cpu.Hz = int64(hw.CpuMhz) * 1000 * 1000
	info.CpuInfo = cpu
	info.MemorySize = hw.MemorySize
	esx.HostHardwareInfo = &info
}

func build(ctx context.Context, model *simulator.Model, cfg *config) (*inventory, error) {
	c, err := vim25.NewClient(ctx, model.Service)
	if err != nil {
		return nil, err
	}
	inv := &inventory{
		vmIndex: map[moref]int{}, vmByName: map[string]int{},
		hostIndex: map[moref]int{}, hostByName: map[string]int{},
		dsIndex: map[moref]int{}, dsByName: map[string]int{}, dcNames: map[moref]string{},
	}
	root := object.NewRootFolder(c)
	dcFolders := map[string]*object.DatacenterFolders{}
	hostPool := map[string]moref{}
	for _, dcc := range cfg.Datacenters {
		dc, err := root.CreateDatacenter(ctx, dcc.Name)
		if err != nil {
			return nil, fmt.Errorf("datacenter %s: %w", dcc.Name, err)
		}
		inv.dcNames[dc.Reference()] = dcc.Name
		folders, err := dc.Folders(ctx)
		if err != nil {
			return nil, err
		}
		dcFolders[dcc.Name] = folders
		for _, cc := range dcc.Clusters {
			cluster, err := folders.HostFolder.CreateCluster(ctx, cc.Name, types.ClusterConfigSpecEx{})
			if err != nil {
				return nil, fmt.Errorf("cluster %s: %w", cc.Name, err)
			}
			for _, hc := range cc.Hosts {
				setHostTemplate(hc)
				task, err := cluster.AddHost(ctx, types.HostConnectSpec{HostName: hc.Name}, true, nil, nil)
				if err != nil {
					return nil, fmt.Errorf("host %s: %w", hc.Name, err)
				}
				info, err := task.WaitForResult(ctx, nil)
				if err != nil {
					return nil, fmt.Errorf("host %s: %w", hc.Name, err)
				}
				ref := info.Result.(moref)
				inv.hostIndex[ref] = len(inv.hosts)
				inv.hostByName[hc.Name] = len(inv.hosts)
				inv.hosts = append(inv.hosts, simulator.Map.Get(ref).(*simulator.HostSystem))
				inv.hostCfg = append(inv.hostCfg, hc)
				inv.hostDC = append(inv.hostDC, dc.Reference())
				inv.hostDS = append(inv.hostDS, nil)
			}
			pool, err := cluster.ResourcePool(ctx)
			if err != nil {
				return nil, err
			}
			for _, hc := range cc.Hosts {
				hostPool[hc.Name] = pool.Reference()
			}
		}
	}
	if err := buildDatastores(ctx, c, cfg, inv); err != nil {
		return nil, err
	}
	if err := buildVMs(cfg, inv, dcFolders, hostPool); err != nil {
		return nil, err
	}
	return inv, nil
}

// buildDatastores creates each datastore on every host that mounts it. Its directory ends in the
// volume id, as a VMFS volume's URL does (ds:///vmfs/volumes/<uuid>/), so a client finds the
// instance of its datastore.* counters from summary.url either way.
func buildDatastores(ctx context.Context, c *vim25.Client, cfg *config, inv *inventory) error {
	for _, dsc := range cfg.Datastores {
		dir := filepath.Join(cfg.DatastoreDir, "vmfs", "volumes", dsc.UUID)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		var ref moref
		var mounts []types.DatastoreHostMount
		for _, hn := range dsc.Hosts {
			h, ok := inv.hostByName[hn]
			if !ok {
				return fmt.Errorf("datastore %s: unknown host %q", dsc.Name, hn)
			}
			host := object.NewHostSystem(c, inv.hosts[h].Self)
			dss, err := host.ConfigManager().DatastoreSystem(ctx)
			if err != nil {
				return err
			}
			ds, err := dss.CreateLocalDatastore(ctx, dsc.Name, dir)
			if err != nil {
				return fmt.Errorf("datastore %s on %s: %w", dsc.Name, hn, err)
			}
			ref = ds.Reference()
			inv.hostDS[h] = append(inv.hostDS[h], len(inv.datastores))
			mounts = append(mounts, types.DatastoreHostMount{
				Key: inv.hosts[h].Self,
				MountInfo: types.HostMountInfo{
					Path:       dir,
					AccessMode: string(types.HostMountModeReadWrite),
					Mounted:    types.NewBool(true),
					Accessible: types.NewBool(true),
				},
			})
		}
		if len(mounts) == 0 {
			return fmt.Errorf("datastore %s: no host mounts it", dsc.Name)
		}
		ds := simulator.Map.Get(ref).(*simulator.Datastore)
		// v0.46.3 records only the first host's mount of a shared local datastore
		ds.Host = mounts
		ds.Summary.Type = "VMFS"
		ds.Summary.Capacity = dsc.CapacityBytes
		ds.Summary.FreeSpace = dsc.CapacityBytes
		info := ds.Info.GetDatastoreInfo()
		info.FreeSpace = dsc.CapacityBytes
		info.MaxFileSize = dsc.CapacityBytes
		inv.dsIndex[ref] = len(inv.datastores)
		inv.dsByName[dsc.Name] = len(inv.datastores)
		inv.datastores = append(inv.datastores, ds)
		inv.dsCfg = append(inv.dsCfg, dsc)
	}
	return nil
}

func vmSpec(v vmConfig) types.VirtualMachineConfigSpec {
	spec := types.VirtualMachineConfigSpec{
		Name:     v.Name,
		GuestId:  v.GuestID,
		NumCPUs:  v.CPUs,
		MemoryMB: v.MemoryMB,
		Files:    &types.VirtualMachineFileInfo{VmPathName: "[" + v.Datastore + "]"},
	}
	var devices object.VirtualDeviceList
	scsi, _ := devices.CreateSCSIController("pvscsi")
	disk := devices.CreateDisk(scsi.(types.BaseVirtualController), types.ManagedObjectReference{},
		"["+v.Datastore+"] "+v.Name+"/"+v.Name+".vmdk")
	disk.CapacityInKB = max(v.DiskGB, 1) * 1024 * 1024
	nic := esx.EthernetCard
	devices = append(devices, scsi, disk, &nic)
	spec.DeviceChange, _ = devices.ConfigSpec(types.VirtualDeviceConfigSpecOperationAdd)
	return spec
}

func buildVMs(cfg *config, inv *inventory, folders map[string]*object.DatacenterFolders, pools map[string]moref) error {
	// Each creation holds the folder's lock until its task has run, so dispatching them one after
	// the other is as fast as it gets; the tasks are collected at the end.
	tasks := make([]*simulator.Task, len(cfg.VMs))
	for i, v := range cfg.VMs {
		t, err := createVM(v, inv, folders, pools)
		if err != nil {
			return fmt.Errorf("VM %s: %w", v.Name, err)
		}
		tasks[i] = t
	}
	for i, v := range cfg.VMs {
		t := tasks[i]
		t.Wait()
		if t.Info.Error != nil {
			return fmt.Errorf("VM %s: %s", v.Name, t.Info.Error.LocalizedMessage)
		}
		ref := t.Info.Result.(moref)
		inv.vmIndex[ref] = i
		inv.vmByName[v.Name] = i
		inv.vms = append(inv.vms, simulator.Map.Get(ref).(*simulator.VirtualMachine))
		inv.vmCfg = append(inv.vmCfg, v)
		inv.vmDS = append(inv.vmDS, inv.dsByName[v.Datastore])
	}
	return nil
}

func createVM(v vmConfig, inv *inventory, folders map[string]*object.DatacenterFolders, pools map[string]moref) (*simulator.Task, error) {
	h, ok := inv.hostByName[v.Host]
	if !ok {
		return nil, fmt.Errorf("unknown host %q", v.Host)
	}
	if _, ok := inv.dsByName[v.Datastore]; !ok {
		return nil, fmt.Errorf("unknown datastore %q", v.Datastore)
	}
	fs, ok := folders[v.Datacenter]
	if !ok {
		return nil, fmt.Errorf("unknown datacenter %q", v.Datacenter)
	}
	folder := simulator.Map.Get(fs.VmFolder.Reference()).(*simulator.Folder)
	host := inv.hosts[h].Self
	ctx := simulator.SpoofContext() // its own lock identity: creations serialise on the folder
	var body soap.HasFault
	ctx.WithLock(folder, func() {
		body = folder.CreateVMTask(ctx, &types.CreateVM_Task{
			This: folder.Self, Config: vmSpec(v), Pool: pools[v.Host], Host: &host,
		})
	})
	res := body.(*methods.CreateVM_TaskBody)
	if res.Fault_ != nil {
		return nil, fmt.Errorf("%s", res.Fault_.String)
	}
	return simulator.Map.Get(res.Res.Returnval).(*simulator.Task), nil
}
