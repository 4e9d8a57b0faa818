package osd

// Connections to other OSDs: one messenger client per address, and calls
// whose remote errors come back as osdop's (a refused connection is
// reported to the MONs at once with osd_fast_fail_on_connection_refused).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/osdop"
)

// peer returns the messenger client for OSD id's address addr
// ("host:port/nonce"). A new connection to a cluster (back) address
// leaves from this OSD's own cluster address.
func (d *OSD) peer(id int32, addr string) *msgr.Client {
	a, _, _ := strings.Cut(addr, "/")
	d.peerMu.Lock()
	c := d.peers[a]
	d.peerMu.Unlock()
	if c != nil {
		return c
	}
	src := d.addr
	if d.clusterAddr != "" && d.backAddrOf(id) == addr {
		src = d.clusterAddr
	}
	d.peerMu.Lock()
	defer d.peerMu.Unlock()
	if c = d.peers[a]; c == nil {
		pc := d.msgr
		pc.MaxBackoff, pc.DialTimeout, pc.SourceIP = time.Second, 2*time.Second, sourceIP(src)
		c = msgr.Dial(a, d.o.Keyring, pc)
		d.peers[a] = c
	}
	return c
}

// backAddrOf is OSD id's cluster address in the current map, "" if none.
func (d *OSD) backAddrOf(id int32) string {
	m, _ := d.curMap()
	if m == nil || id < 0 || id >= m.MaxOSD() {
		return ""
	}
	return m.OSDs[id].ClusterAddr
}

// sourceIP is the host of a listen address of this OSD, which its
// connections on that network leave from ("" when it listens on every
// address).
func sourceIP(addr string) string {
	host, _, err := net.SplitHostPort(strings.Split(addr, "/")[0])
	if ip := net.ParseIP(host); err != nil || ip == nil || ip.IsUnspecified() {
		return ""
	}
	return host
}

// call sends a message to OSD id at addr (its public or cluster address)
// and returns the reply payload (a copy). A refused connection is
// reported to the MONs at once.
func (d *OSD) call(ctx context.Context, id int32, addr string, typ uint16, payload []byte) ([]byte, error) {
	rep, err := d.peer(id, addr).Call(ctx, typ, payload)
	return d.answer(id, addr, rep, err)
}

// callVec is call with the payload as parts (see msgr.Client.CallVecSum)
// and its checksum already computed.
func (d *OSD) callVec(ctx context.Context, id int32, addr string, typ uint16, parts [][]byte, sum uint32) ([]byte, error) {
	rep, err := d.peer(id, addr).CallVecSum(ctx, typ, parts, sum)
	return d.answer(id, addr, rep, err)
}

// callRef is call returning the reply itself, whose payload the caller
// reads in place and then releases (rep.Release): a large reply (a shard
// read) is not copied out of the receive buffer.
func (d *OSD) callRef(ctx context.Context, id int32, addr string, typ uint16, payload []byte) (*msgr.Message, error) {
	rep, err := d.peer(id, addr).Call(ctx, typ, payload)
	if err != nil {
		return nil, d.callErr(id, addr, err)
	}
	return rep, nil
}

// answer is a peer call's reply payload (copied) or error.
func (d *OSD) answer(id int32, addr string, rep *msgr.Message, err error) ([]byte, error) {
	if err != nil {
		return nil, d.callErr(id, addr, err)
	}
	out := append([]byte(nil), rep.Payload...)
	rep.Release()
	return out, nil
}

// callErr is the error of a failed peer call: the peer's own error as
// the osdop error it names, or the call's with the peer's id; a refused
// connection is reported to the MONs at once.
func (d *OSD) callErr(id int32, addr string, err error) error {
	if errors.Is(err, syscall.ECONNREFUSED) && d.conf().Bool("osd_fast_fail_on_connection_refused") {
		d.reportFailure(id, d.frontAddr(id, addr), true)
	}
	var re *msgr.RemoteError
	if errors.As(err, &re) {
		return osdop.FromErrno(syscall.Errno(re.Code), re.Msg)
	}
	return fmt.Errorf("osd.%d: %w", id, err)
}

// frontAddr is the public address of OSD id reached at addr: the MONs
// know an instance by it.
func (d *OSD) frontAddr(id int32, addr string) string {
	m, _ := d.curMap()
	if m != nil && id >= 0 && id < m.MaxOSD() && addr != "" && m.OSDs[id].ClusterAddr == addr {
		return m.OSDs[id].Addr
	}
	return addr
}
