//go:build !linux

package msgr

import "net"

// sockReader is not used where SO_RCVLOWAT is not (see lowat_linux.go):
// newSockReader returns nil and frames are read through the connection.
type sockReader struct{}

func newSockReader(net.Conn) *sockReader { return nil }

func (*sockReader) readFull([]byte, int) error { panic("unreachable") }

func (*sockReader) reset() {}
