// Package testnet helps tests find loopback ports.
package testnet

import (
	"net"
	"strconv"
	"testing"
)

// FreePortPair returns "127.0.0.1:p" where ports p and p+1 are both free
// (a MON serves on p and runs raft on p+1).
func FreePortPair(tb testing.TB) string {
	tb.Helper()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		ln2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+1))
		ln.Close()
		if err == nil {
			ln2.Close()
			return "127.0.0.1:" + strconv.Itoa(p)
		}
	}
	tb.Fatal("no free port pair on 127.0.0.1")
	return ""
}
