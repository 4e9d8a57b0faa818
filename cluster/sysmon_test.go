package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/config"
)

// TestMain doubles as the child of TestKeepSysmonPolling: with
// SHOAL_TEST_SYSMON_CHILD set, the test binary runs keepSysmonPolling as
// a daemon would at start and prints its pid and GODEBUG.
func TestMain(m *testing.M) {
	if poll, ok := os.LookupEnv("SHOAL_TEST_SYSMON_CHILD"); ok {
		cfg := config.Defaults("osd.0")
		if err := cfg.Set("daemon_sysmon_poll", poll); err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		keepSysmonPolling(cfg, "osd.0") // a failed exec is on stderr
		godebug, ok := os.LookupEnv("GODEBUG")
		fmt.Printf("%d %t %s\n", os.Getpid(), ok, godebug)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestKeepSysmonPolling(t *testing.T) {
	for _, tc := range []struct {
		name, poll string
		godebug    *string // nil: unset
		want       string  // GODEBUG the daemon ends up with; "" and unset stay unset
	}{
		{"unset", "true", nil, "schedtrace=2147483647"},
		{"others kept", "true", ptr("madvdontneed=1,gctrace=0"), "madvdontneed=1,gctrace=0,schedtrace=2147483647"},
		{"operator's schedtrace wins", "true", ptr("gctrace=0,schedtrace=0"), "gctrace=0,schedtrace=0"},
		{"option off", "false", ptr("gctrace=0"), "gctrace=0"},
		{"option off, unset", "false", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GODEBUG=") })
			cmd.Env = append(cmd.Env, "SHOAL_TEST_SYSMON_CHILD="+tc.poll)
			if tc.godebug != nil {
				cmd.Env = append(cmd.Env, "GODEBUG="+*tc.godebug)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("child: %v: %s%s", err, out, stderr.String())
			}
			line, _, _ := strings.Cut(string(out), "\n")
			f := strings.SplitN(line, " ", 3)
			if len(f) < 2 {
				t.Fatalf("child printed %q", out)
			}
			// Re-executing keeps the pid: the daemon's pid file and its
			// parent's handle stay right.
			if pid, _ := strconv.Atoi(f[0]); pid != cmd.Process.Pid {
				t.Errorf("child ran as pid %s, started as %d", f[0], cmd.Process.Pid)
			}
			got := ""
			if len(f) == 3 {
				got = f[2]
			}
			if set := f[1] == "true"; set != (tc.want != "") || got != tc.want {
				t.Errorf("GODEBUG set %s %q, want %q (stderr: %s)", f[1], got, tc.want, stderr.String())
			}
		})
	}
}

func ptr(s string) *string { return &s }
