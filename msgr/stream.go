package msgr

import (
	"net"
	"time"
)

// Authenticate runs the handshake on a raw connection — as the accepting
// end when server is set — and returns the peer's entity name, or ErrAuth.
// It lets other protocols (the MONs' raft transport) share the
// messenger's authentication; what they send afterwards is theirs, not
// the messenger's protected frames.
func Authenticate(nc net.Conn, kr Keyring, server bool, timeout time.Duration) (string, error) {
	nc.SetDeadline(time.Now().Add(timeout))
	defer nc.SetDeadline(time.Time{})
	var s *session
	var err error
	if server {
		s, err = serverHandshake(nc, kr, ModeCRC)
	} else {
		s, err = clientHandshake(nc, kr, ModeCRC)
	}
	if err != nil {
		return "", err
	}
	return s.peer, nil
}
