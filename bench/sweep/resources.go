package sweep

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
	"github.com/prometheus/procfs/blockdevice"
)

// Daemon is a process whose resource use a sweep samples.
type Daemon struct {
	Name string // "osd.0", "mon.a", "ceph-osd.1234"
	PID  int
}

// Usage is what the cluster's host spent while a point was measured.
type Usage struct {
	// CPU is each daemon's user+system CPU seconds; CPUAll their sum.
	CPU    map[string]float64 `json:"cpu_s"`
	CPUAll float64            `json:"cpu_all_s"`
	// MachineCPU is the seconds all CPUs were busy (/proc/stat: all but
	// idle and iowait), the load generator and the kernel included.
	MachineCPU float64 `json:"machine_cpu_s"`
	// PeakRSS is each daemon's peak resident set since it started
	// (VmHWM), bytes, read at the end of the point.
	PeakRSS map[string]uint64 `json:"peak_rss_bytes"`
	// Devices are /proc/diskstats deltas of the devices that did I/O.
	Devices map[string]DeviceIO `json:"devices,omitempty"`
	// Net are /proc/net/dev deltas of the interfaces that moved bytes.
	Net map[string]NetIO `json:"net,omitempty"`
}

// DeviceIO is one block device's I/O.
type DeviceIO struct {
	ReadOps    uint64 `json:"read_ops"`
	ReadBytes  uint64 `json:"read_bytes"`
	WriteOps   uint64 `json:"write_ops"`
	WriteBytes uint64 `json:"write_bytes"`
}

// NetIO is one interface's traffic.
type NetIO struct {
	RxBytes uint64 `json:"rx_bytes"`
	TxBytes uint64 `json:"tx_bytes"`
}

// usageSnap is the counters at one instant.
type usageSnap struct {
	cpu     map[string]float64
	machine float64
	devices map[string]DeviceIO
	net     map[string]NetIO
}

// procRoot is /proc (a test points it elsewhere); /proc is read through
// github.com/prometheus/procfs.
var procRoot = "/proc"

// procFS is procfs at procRoot (nil if it cannot be opened).
func procFS() *procfs.FS {
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return nil
	}
	return &fs
}

func snapUsage(daemons []Daemon) usageSnap {
	s := usageSnap{cpu: map[string]float64{}, devices: diskstats(), net: netdev()}
	for _, d := range daemons {
		if t, ok := procCPU(d.PID); ok {
			s.cpu[d.Name] = t
		}
	}
	s.machine = machineBusy()
	return s
}

// since is the usage from a to b.
func since(a, b usageSnap, daemons []Daemon) Usage {
	u := Usage{CPU: map[string]float64{}, PeakRSS: map[string]uint64{}, Devices: map[string]DeviceIO{}, Net: map[string]NetIO{}}
	for n, t := range b.cpu {
		if t0, ok := a.cpu[n]; ok {
			u.CPU[n] = t - t0
			u.CPUAll += t - t0
		}
	}
	u.MachineCPU = b.machine - a.machine
	for n, d := range b.devices {
		d0 := a.devices[n]
		dd := DeviceIO{d.ReadOps - d0.ReadOps, d.ReadBytes - d0.ReadBytes, d.WriteOps - d0.WriteOps, d.WriteBytes - d0.WriteBytes}
		if dd != (DeviceIO{}) {
			u.Devices[n] = dd
		}
	}
	for n, x := range b.net {
		x0 := a.net[n]
		dx := NetIO{x.RxBytes - x0.RxBytes, x.TxBytes - x0.TxBytes}
		if dx != (NetIO{}) {
			u.Net[n] = dx
		}
	}
	for _, d := range daemons {
		if v, ok := peakRSS(d.PID); ok {
			u.PeakRSS[d.Name] = v
		}
	}
	return u
}

// procCPU is a process's user+system CPU seconds (/proc/PID/stat).
func procCPU(pid int) (float64, bool) {
	fs := procFS()
	if fs == nil {
		return 0, false
	}
	p, err := fs.Proc(pid)
	if err != nil {
		return 0, false
	}
	st, err := p.Stat()
	if err != nil {
		return 0, false
	}
	return st.CPUTime(), true
}

// peakRSS is VmHWM from /proc/PID/status, bytes.
func peakRSS(pid int) (uint64, bool) {
	fs := procFS()
	if fs == nil {
		return 0, false
	}
	p, err := fs.Proc(pid)
	if err != nil {
		return 0, false
	}
	st, err := p.NewStatus()
	if err != nil {
		return 0, false
	}
	return st.VmHWM, true
}

// machineBusy is the seconds all CPUs have been busy (/proc/stat's cpu
// line: all but idle and iowait; guest time is already in user).
func machineBusy() float64 {
	fs := procFS()
	if fs == nil {
		return 0
	}
	st, err := fs.Stat()
	if err != nil {
		return 0
	}
	c := st.CPUTotal
	return c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal
}

// diskstats reads /proc/diskstats: reads and writes completed and
// sectors moved; sectors are 512 bytes whatever the device's
// (Documentation/admin-guide/iostats.rst).
func diskstats() map[string]DeviceIO {
	out := map[string]DeviceIO{}
	fs, err := blockdevice.NewFS(procRoot, procRoot) // sysfs is not read for diskstats
	if err != nil {
		return out
	}
	stats, err := fs.ProcDiskstats()
	if err != nil {
		return out
	}
	for _, d := range stats {
		out[d.DeviceName] = DeviceIO{ReadOps: d.ReadIOs, ReadBytes: d.ReadSectors * 512, WriteOps: d.WriteIOs, WriteBytes: d.WriteSectors * 512}
	}
	return out
}

// netdev reads /proc/net/dev: per interface, bytes received and sent.
func netdev() map[string]NetIO {
	out := map[string]NetIO{}
	fs := procFS()
	if fs == nil {
		return out
	}
	nd, err := fs.NetDev()
	if err != nil {
		return out
	}
	for name, l := range nd {
		out[name] = NetIO{l.RxBytes, l.TxBytes}
	}
	return out
}

// pidFiles are the daemons of a `shoal up` cluster: DIR/run/NAME.pid.
func pidFiles(dir string) ([]Daemon, error) {
	files, err := filepath.Glob(filepath.Join(dir, "run", "*.pid"))
	if err != nil {
		return nil, err
	}
	var out []Daemon
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			continue
		}
		if _, ok := procCPU(pid); ok {
			out = append(out, Daemon{strings.TrimSuffix(filepath.Base(f), ".pid"), pid})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no running daemon in %s", filepath.Join(dir, "run"))
	}
	return out, nil
}

// byName finds the processes whose command name (/proc/PID/comm) is one
// of names; each is named COMM.ID from its --id argument, else COMM.PID.
func byName(names []string) []Daemon {
	fs := procFS()
	if fs == nil {
		return nil
	}
	procs, _ := fs.AllProcs()
	var out []Daemon
	for _, p := range procs {
		comm, err := p.Comm()
		if err != nil || !slices.Contains(names, comm) {
			continue
		}
		name := comm + "." + strconv.Itoa(p.PID)
		if args, err := p.CmdLine(); err == nil {
			for i, a := range args {
				if (a == "--id" || a == "-i") && i+1 < len(args) {
					name = strings.TrimPrefix(comm, "ceph-") + "." + args[i+1]
				}
			}
		}
		out = append(out, Daemon{name, p.PID})
	}
	slices.SortFunc(out, func(a, b Daemon) int { return strings.Compare(a.Name, b.Name) })
	return out
}
