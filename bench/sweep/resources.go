package sweep

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// clockTicks is USER_HZ, the unit of /proc's CPU times (100 on Linux).
const clockTicks = 100

// procRoot is /proc (a test points it elsewhere).
var procRoot = "/proc"

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

// procCPU is a process's user+system CPU seconds (/proc/PID/stat fields
// 14 and 15, after the command name in parentheses).
func procCPU(pid int) (float64, bool) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return float64(ut+st) / clockTicks, true
}

// peakRSS is VmHWM from /proc/PID/status, bytes.
func peakRSS(pid int) (uint64, bool) {
	f, err := os.Open(filepath.Join(procRoot, strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// machineBusy is the seconds all CPUs have been busy (/proc/stat's cpu
// line: user nice system idle iowait irq softirq steal ...; busy is all
// but idle and iowait).
func machineBusy() float64 {
	b, err := os.ReadFile(filepath.Join(procRoot, "stat"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0
	}
	var busy uint64
	for i, v := range f[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest time is already in user
			continue
		}
		n, _ := strconv.ParseUint(v, 10, 64)
		busy += n
	}
	return float64(busy) / clockTicks
}

// diskstats reads /proc/diskstats: reads completed (field 4), sectors
// read (6), writes completed (8), sectors written (10); sectors are 512
// bytes whatever the device's (Documentation/admin-guide/iostats.rst).
func diskstats() map[string]DeviceIO {
	out := map[string]DeviceIO{}
	b, err := os.ReadFile(filepath.Join(procRoot, "diskstats"))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 10 {
			continue
		}
		n := func(i int) uint64 { v, _ := strconv.ParseUint(f[i], 10, 64); return v }
		out[f[2]] = DeviceIO{ReadOps: n(3), ReadBytes: n(5) * 512, WriteOps: n(7), WriteBytes: n(9) * 512}
	}
	return out
}

// netdev reads /proc/net/dev: per interface, received bytes (the first
// number) and sent bytes (the ninth).
func netdev() map[string]NetIO {
	out := map[string]NetIO{}
	b, err := os.ReadFile(filepath.Join(procRoot, "net", "dev"))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 9 {
			continue
		}
		rx, _ := strconv.ParseUint(f[0], 10, 64)
		tx, _ := strconv.ParseUint(f[8], 10, 64)
		out[strings.TrimSpace(name)] = NetIO{rx, tx}
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
	ents, _ := os.ReadDir(procRoot)
	var out []Daemon
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "comm"))
		if err != nil || !slices.Contains(names, strings.TrimSpace(string(comm))) {
			continue
		}
		name := strings.TrimSpace(string(comm)) + "." + e.Name()
		if cl, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "cmdline")); err == nil {
			args := strings.Split(string(cl), "\x00")
			for i, a := range args {
				if (a == "--id" || a == "-i") && i+1 < len(args) {
					name = strings.TrimPrefix(strings.TrimSpace(string(comm)), "ceph-") + "." + args[i+1]
				}
			}
		}
		out = append(out, Daemon{name, pid})
	}
	slices.SortFunc(out, func(a, b Daemon) int { return strings.Compare(a.Name, b.Name) })
	return out
}
