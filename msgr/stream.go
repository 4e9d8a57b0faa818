package msgr

import (
	"net"
	"time"
)

// Authenticate runs the handshake on a raw connection — as the accepting
// end when server is set — and returns the peer's entity name, or ErrAuth.
// It lets other protocols (the MONs' raft transport) share the
// messenger's authentication.
func Authenticate(nc net.Conn, kr Keyring, server bool, timeout time.Duration) (string, error) {
	nc.SetDeadline(time.Now().Add(timeout))
	defer nc.SetDeadline(time.Time{})
	if server {
		return serverHandshake(nc, kr)
	}
	return clientHandshake(nc, kr)
}
