package cluster

import (
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"syscall"

	"github.com/shoal-project/shoal/config"
)

// sysmonPolling is the GODEBUG setting a daemon runs with when
// daemon_sysmon_poll is set: the scheduler trace every 2^31−1 ms (24.8
// days), the longest period the runtime accepts. While schedtrace is set,
// Go's runtime monitor thread (sysmon) never parks: it keeps polling,
// backing off from 20 µs to 10 ms while there is nothing to retake or
// preempt. Without it, sysmon parks whenever all of the daemon's
// processors are idle, the next system call wakes it
// (entersyscallWakeSysmon in runtime/proc.go) and it then polls every
// 20 µs for at least a millisecond — for a daemon that goes idle and busy
// thousands of times a second, a futex wake-up, a sleep and several
// nanosleeps per busy spell. golang/go#18236 tracks the hard-coded tick.
//
// What else schedtrace does (Go 1.26): the runtime's clock counts from the
// host's boot, so on a host up more than 24.8 days the daemon writes one
// "SCHED ..." line to stderr when it starts and one per 24.8 days after;
// and a fatal error (panic, throw, SIGQUIT) writes a scheduler dump (a
// line per processor, thread and goroutine) before its stack traces —
// which takes the scheduler's lock, so a runtime-internal throw by a
// thread already holding it would hang there instead of exiting (the
// runtime guards only its deadlock check against this). The
// trade-off: after an idle spell sysmon may take up to 10 ms, not 20 µs,
// to hand the processor of a goroutine blocked in a system call to other
// runnable work when no other processor is free.
const sysmonPolling = "schedtrace=2147483647"

// keepSysmonPolling re-executes the daemon name (syscall.Exec: the same
// executable, arguments and pid) with sysmonPolling added to its GODEBUG,
// when cfg's daemon_sysmon_poll is set and GODEBUG does not already set
// schedtrace (an operator's own setting wins, and the re-executed daemon
// finds its own). Call it first thing in a daemon, before it opens files
// or starts goroutines; a CPU profile already started is stopped, since
// its timer would outlive the exec, and so is an execution trace (the
// re-executed daemon starts them again; if the exec fails, they end
// here). It returns only when
// it did not re-execute; if the exec failed, it says why on stderr (the
// daemon's log under `shoal up`) and the daemon runs on with Go's
// default.
func keepSysmonPolling(cfg *config.Config, name string) {
	if !cfg.Bool("daemon_sysmon_poll") {
		return
	}
	env, ok := withSysmonPolling(os.Environ())
	if !ok {
		return
	}
	exe, err := os.Executable()
	if err == nil {
		pprof.StopCPUProfile()
		trace.Stop()
		err = syscall.Exec(exe, os.Args, env) // returns only on failure
	}
	fmt.Fprintf(os.Stderr, "%s: daemon_sysmon_poll: re-execute: %v; running with Go's default\n", name, err)
}

// withSysmonPolling returns env (KEY=VALUE entries, as os.Environ gives)
// with sysmonPolling appended to GODEBUG's comma-separated settings, and
// false (env unchanged) when GODEBUG already sets schedtrace.
func withSysmonPolling(env []string) ([]string, bool) {
	out := make([]string, 0, len(env)+1)
	godebug := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			godebug = v
			continue
		}
		out = append(out, kv)
	}
	for _, s := range strings.Split(godebug, ",") {
		if k, _, _ := strings.Cut(s, "="); k == "schedtrace" { // as the runtime matches it: no trimming
			return env, false
		}
	}
	if godebug != "" {
		godebug += ","
	}
	return append(out, "GODEBUG="+godebug+sysmonPolling), true
}
