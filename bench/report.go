package bench

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
)

// lockedWriter serialises the text output of the status goroutine and the
// workers' "is not correct!" lines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) write(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(p)
}

func (l *lockedWriter) printf(format string, args ...any) {
	l.write(fmt.Appendf(nil, format, args...))
}

// g6 formats x as a C++ ostream does with its default precision of 6
// significant digits (printf "%g"), which obj_bencher.cc relies on.
func g6(x float64) string {
	return strconv.FormatFloat(x, 'g', 6, 64)
}

// fmtSeconds prints a duration in seconds, without a fraction when whole.
func fmtSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// printer is obj_bencher.cc's status_printer: called once at the start and
// then once a second, it prints one line of the table (repeating the header
// every 20 lines, preceded by a min/max/avg latency line) and takes the
// per-second bandwidth and IOPS samples the summary's stddev/max/min use.
type printer struct {
	out    *lockedWriter // nil = sample only
	opSize int
	start  time.Time

	i            int // line number = seconds since start
	prevFinished int
	cycles       int // ticks since finished last changed
	bw           []float64
	iops         []int
}

func newPrinter(out *lockedWriter, opSize int, start time.Time) *printer {
	return &printer{out: out, opSize: opSize, start: start}
}

// header is the table header (setw 5, 8, 10×4, 12, 12 in obj_bencher.cc).
var header = fmt.Sprintf("%5s%8s%10s%10s%10s%10s%12s%12s\n",
	"sec", "Cur ops", "started", "finished", "avg MB/s", "cur MB/s", "last lat(s)", "avg lat(s)")

func (p *printer) tick(now time.Time, s snapshot) {
	var b bytes.Buffer
	if p.i%20 == 0 {
		if p.i > 0 {
			fmt.Fprintf(&b, "%s min lat: %s max lat: %s avg lat: %s\n",
				now.Format("2006-01-02T15:04:05.000000-0700"), g6(s.minLat), g6(s.maxLat), g6(s.avgLat))
		}
		b.WriteString(header)
	}
	delta := s.finished - p.prevFinished
	if p.cycles > 0 {
		bw := float64(delta) * float64(p.opSize) / mib / float64(p.cycles)
		p.bw = append(p.bw, bw)
		p.iops = append(p.iops, int(float64(delta)/float64(p.cycles)))
	}
	avgBW := 0.0
	if el := now.Sub(p.start).Seconds(); el > 0 {
		avgBW = float64(p.opSize) * float64(s.finished) / el / mib
	}
	if delta != 0 {
		cur := "-1" // no full second yet, as obj_bencher.cc prints it
		if p.cycles > 0 {
			cur = g6(p.bw[len(p.bw)-1])
		}
		fmt.Fprintf(&b, "%5d %7d %9d %9d %9s %9s %11s %11s\n",
			p.i, s.inFlight, s.started, s.finished, g6(avgBW), cur, g6(s.curLat), g6(s.avgLat))
		p.prevFinished = s.finished
		p.cycles = 0
	} else {
		fmt.Fprintf(&b, "%5d %7d %9d %9d %9s %9s %11s %11s\n",
			p.i, s.inFlight, s.started, s.finished, g6(avgBW), "0", "-", g6(s.avgLat))
	}
	p.i++
	p.cycles++
	if p.out != nil {
		p.out.write(b.Bytes())
	}
}

// summary formats the end-of-run block of obj_bencher.cc (write_bench or
// seq_read_bench/rand_read_bench, whose labels and padding differ), plus
// our p50 and p99 latency lines.
func summary(r *Result) []byte {
	var b bytes.Buffer
	line := func(width int, label, value string) {
		fmt.Fprintf(&b, "%-*s%s\n", width, label, value)
	}
	d := strconv.FormatInt
	if r.Mode == ModeWrite {
		const w = 24
		line(w, "Total time run:", g6(r.TotalTime))
		line(w, "Total writes made:", d(r.Ops, 10))
		line(w, "Write size:", strconv.Itoa(r.OpSize))
		line(w, "Object size:", strconv.Itoa(r.ObjectSize))
		line(w, "Bandwidth (MB/sec):", g6(r.BandwidthAvg))
		line(w, "Stddev Bandwidth:", g6(r.BandwidthStddev))
		line(w, "Max bandwidth (MB/sec):", g6(r.BandwidthMax))
		line(w, "Min bandwidth (MB/sec):", g6(r.BandwidthMin))
		line(w, "Average IOPS:", strconv.Itoa(int(r.IOPSAvg)))
		line(w, "Stddev IOPS:", g6(r.IOPSStddev))
		line(w, "Max IOPS:", strconv.Itoa(r.IOPSMax))
		line(w, "Min IOPS:", strconv.Itoa(r.IOPSMin))
		line(w, "Average Latency(s):", g6(r.LatencyAvg))
		line(w, "Stddev Latency(s):", g6(r.LatencyStddev))
		line(w, "Max latency(s):", g6(r.LatencyMax))
		line(w, "Min latency(s):", g6(r.LatencyMin))
		line(w, "p50 latency(s):", g6(r.LatencyP50))
		line(w, "p99 latency(s):", g6(r.LatencyP99))
		return b.Bytes()
	}
	const w = 22
	line(w, "Total time run:", g6(r.TotalTime))
	line(w, "Total reads made:", d(r.Ops, 10))
	line(w, "Read size:", strconv.Itoa(r.OpSize))
	line(w, "Object size:", strconv.Itoa(r.ObjectSize))
	line(w, "Bandwidth (MB/sec):", g6(r.BandwidthAvg))
	line(w, "Average IOPS:", strconv.Itoa(int(r.IOPSAvg)))
	line(w, "Stddev IOPS:", g6(r.IOPSStddev))
	line(w, "Max IOPS:", strconv.Itoa(r.IOPSMax))
	line(w, "Min IOPS:", strconv.Itoa(r.IOPSMin))
	line(w, "Average Latency(s):", g6(r.LatencyAvg))
	line(w, "Max latency(s):", g6(r.LatencyMax))
	line(w, "Min latency(s):", g6(r.LatencyMin))
	line(w, "p50 latency(s):", g6(r.LatencyP50))
	line(w, "p99 latency(s):", g6(r.LatencyP99))
	return b.Bytes()
}
