package cluster_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/cluster"
)

// TestUpBadInput: a new cluster's --set with an unknown option or a bad
// value, and a --base-port out of range or whose range holds a port in
// use, are refused with a clear error before anything is written.
func TestUpBadInput(t *testing.T) {
	// a port in use, the ports of the range below it free (else the check
	// names the first of those that another process holds)
	var ln net.Listener
	for try := 0; ln == nil; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		free := true
		for p := l.Addr().(*net.TCPAddr).Port - 11; p < l.Addr().(*net.TCPAddr).Port && free; p++ {
			if probe, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err != nil {
				free = false
			} else {
				probe.Close()
			}
		}
		if free || try == 20 {
			ln = l
		} else {
			l.Close()
		}
	}
	defer ln.Close()
	busy := ln.Addr().(*net.TCPAddr).Port
	for _, c := range []struct {
		o    cluster.UpOptions
		want string
	}{
		{cluster.UpOptions{Set: []string{"osd_heartbeat_graze=5"}}, "osd_heartbeat_graze"},
		{cluster.UpOptions{Set: []string{"osd_heartbeat_grace=soon"}}, "osd_heartbeat_grace=soon"},
		{cluster.UpOptions{Set: []string{"osd_heartbeat_grace"}}, "want NAME=VALUE"},
		{cluster.UpOptions{BasePort: 80}, "want 1024"},
		{cluster.UpOptions{BasePort: busy - 11}, "port " + strconv.Itoa(busy) + " on 127.0.0.1 is in use"}, // the metrics port
	} {
		dir := filepath.Join(t.TempDir(), "c")
		c.o.Data, c.o.Mons, c.o.OSDs = dir, 1, 1
		err := cluster.Up(context.Background(), c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error with %q", c.o, err, c.want)
		}
		if _, serr := os.Stat(dir); !os.IsNotExist(serr) {
			t.Errorf("%+v: %s was made", c.o, dir)
		}
	}
}
