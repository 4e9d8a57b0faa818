// Package monc is the MON client (Ceph's MonClient) and the MON protocol:
// commands to the monitors and the subscription to the OSD map, shared by
// OSDs, the client library and the CLI.
//
// A command is JSON — a prefix such as "pool create" and string arguments,
// as Ceph's `ceph` CLI sends — answered by a message and optional JSON
// data. Any MON accepts any command: one that is not the raft leader
// forwards changes to the leader. The map subscription is a long poll:
// GetMap sends the epoch it holds and receives the incrementals after it
// (or the full map when the MON no longer has them), waiting up to a few
// seconds for a newer epoch when there is none.
package monc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shoal-project/shoal/internal/wire"
	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// Message types of the MON protocol.
const (
	MsgCommand uint16 = 10 + iota // Command JSON → Result JSON
	MsgGetMap                     // MapRequest → MapReply
)

// Command is a request to the MONs.
type Command struct {
	Prefix string            `json:"prefix"`
	Args   map[string]string `json:"args,omitempty"`
}

// Result is a command's answer.
type Result struct {
	Message string          `json:"message,omitempty"`
	Epoch   uint32          `json:"epoch,omitempty"` // the OSD map's epoch once a change is committed
	Data    json.RawMessage `json:"data,omitempty"`
}

// Errors commands fail with (errors.Is); the MON sends them as errno codes.
var (
	ErrNotFound  = errors.New("not found")
	ErrExists    = errors.New("already exists")
	ErrInvalid   = errors.New("invalid argument")
	ErrBusy      = errors.New("busy")
	ErrNotLeader = errors.New("no MON leader (quorum lost?)")
	ErrNoMon     = errors.New("no MON reachable")
	// ErrPermission: the caller's mon caps do not allow the command (or
	// its osd caps the pool op it asks for); osdop's, so one errors.Is
	// catches a refusal by a MON or an OSD.
	ErrPermission = osdop.ErrPermission
)

// Codes carries errors over the messenger as errno values.
var codes = []struct {
	err  error
	code syscall.Errno
}{{ErrNotFound, syscall.ENOENT}, {ErrExists, syscall.EEXIST}, {ErrInvalid, syscall.EINVAL}, {ErrBusy, syscall.EBUSY}, {ErrNotLeader, syscall.EAGAIN}, {ErrPermission, syscall.EACCES}}

// RemoteError turns err into the messenger error a MON replies with: the
// errno of the first of this package's errors it wraps.
func RemoteError(err error) error {
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return &msgr.RemoteError{Code: int32(c.code), Msg: err.Error()}
		}
	}
	return err
}

func fromRemote(err error) error {
	var re *msgr.RemoteError
	if !errors.As(err, &re) {
		return err
	}
	for _, c := range codes {
		if re.Code == int32(c.code) {
			return fmt.Errorf("%w: %s", c.err, strings.TrimPrefix(re.Msg, c.err.Error()+": "))
		}
	}
	return errors.New(re.Msg)
}

// AuthEntry is an entity's record in the MONs' key database, as `auth
// dump` returns it: its key (base64 of 32 bytes) and its caps, service
// ("mon", "osd") → capability string (package caps).
type AuthEntry struct {
	Key  string            `json:"key"`
	Caps map[string]string `json:"caps"`
}

// UnmarshalJSON also reads the record of MONs from before caps: the key
// alone, as a JSON string. Caps stays nil only then; an entity with no
// caps has an empty map.
func (e *AuthEntry) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		*e = AuthEntry{}
		return json.Unmarshal(b, &e.Key)
	}
	type plain AuthEntry
	return json.Unmarshal(b, (*plain)(e))
}

// AuthArgs are the arguments of `auth add` or `auth caps` for entity
// with caps (service → capability string): "caps_SERVICE" for each, as
// Ceph's auth commands take service and caps pairs.
func AuthArgs(entity string, caps map[string]string) map[string]string {
	args := map[string]string{"entity": entity}
	for svc, c := range caps {
		args["caps_"+svc] = c
	}
	return args
}

// ArgsCaps reads the caps back from AuthArgs' arguments.
func ArgsCaps(args map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range args {
		if svc, ok := strings.CutPrefix(k, "caps_"); ok {
			out[svc] = v
		}
	}
	return out
}

// MapRequest asks for the OSD map after Have (0: the full map); Wait makes
// the MON hold the request up to WaitFor until a newer epoch exists.
type MapRequest struct {
	Have osdmap.Epoch
	Wait bool
}

// EncodeMapRequest and DecodeMapRequest are the wire form of MapRequest.
func EncodeMapRequest(r MapRequest) []byte {
	e := wire.NewEncoder(nil)
	e.U32(uint32(r.Have))
	e.Bool(r.Wait)
	return e.Bytes()
}

// DecodeMapRequest reads EncodeMapRequest's output.
func DecodeMapRequest(b []byte) (MapRequest, error) {
	d := wire.NewDecoder(b)
	r := MapRequest{Have: osdmap.Epoch(d.U32()), Wait: d.Bool()}
	return r, d.Err()
}

// MapReply is a full map or incrementals, encoded, and the MON map the
// answering MON holds (its voters), which clients follow.
type MapReply struct {
	Full []byte
	Incs [][]byte
	Mons MonMap
}

// Encode is MapReply's wire form.
func (r MapReply) Encode() []byte {
	e := wire.NewEncoder(nil)
	e.Blob(r.Full)
	e.U32(uint32(len(r.Incs)))
	for _, b := range r.Incs {
		e.Blob(b)
	}
	e.U64(r.Mons.Epoch)
	e.Strings(r.Mons.Voters())
	return e.Bytes()
}

func decodeMapReply(b []byte) (MapReply, error) {
	d := wire.NewDecoder(b)
	r := MapReply{Full: d.Blob()}
	n := d.Count(4)
	for range n {
		r.Incs = append(r.Incs, d.Blob())
	}
	r.Mons.Epoch = d.U64()
	for _, a := range d.Strings() {
		r.Mons.Mons = append(r.Mons.Mons, MonInfo{Addr: a, Voter: true})
	}
	return r, d.Err()
}

// MonMap is the MONs' membership, Ceph's monmap: raft's configuration,
// whose log index is its epoch (a later configuration has a greater
// one). A MON joins as a non-voter, catching up on the log, and votes
// once the leader promotes it (`shoal mon add`).
type MonMap struct {
	Epoch uint64    `json:"epoch"`
	Mons  []MonInfo `json:"mons"`
}

// MonInfo is one MON of the MonMap.
type MonInfo struct {
	Addr  string `json:"addr"`  // its messenger address (raft's is the next port)
	Voter bool   `json:"voter"` // false while it catches up
}

// Voters are the voting MONs' addresses.
func (m MonMap) Voters() []string {
	var out []string
	for _, mi := range m.Mons {
		if mi.Voter {
			out = append(out, mi.Addr)
		}
	}
	return out
}

// Has reports whether addr is a member (voting or not).
func (m MonMap) Has(addr string) bool {
	return slices.ContainsFunc(m.Mons, func(mi MonInfo) bool { return mi.Addr == addr })
}

// WaitFor is how long a MON holds a waiting MapRequest.
const WaitFor = 10 * time.Second

// Client talks to the MONs at addrs (any of them; it moves on when one
// fails), and follows the MON map's changes: the map replies carry the
// MONs' addresses, so a client finds the MONs added after it connected
// and drops those removed.
type Client struct {
	kr  msgr.Keyring
	cfg msgr.Config

	mu       sync.Mutex
	mons     []*msgr.Client
	cur      int
	monEpoch uint64   // of the last MON map seen (0: none)
	voters   []string // its voters
	closed   bool
}

// New returns a Client for the MONs at addrs, authenticating with kr.
func New(addrs []string, kr msgr.Keyring, cfg msgr.Config) (*Client, error) {
	if len(addrs) == 0 {
		return nil, fmt.Errorf("monc: no MON addresses (set mon_host)")
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 500 * time.Millisecond
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 2 * time.Second
	}
	c := &Client{kr: kr, cfg: cfg}
	for _, a := range addrs {
		c.mons = append(c.mons, msgr.Dial(a, kr, cfg))
	}
	return c, nil
}

// Addrs are the addresses of the MONs the client talks to: those it was
// given, less the MONs removed and plus those added since it connected
// (follow).
func (c *Client) Addrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addrsLocked()
}

func (c *Client) addrsLocked() []string {
	out := make([]string, len(c.mons))
	for i, m := range c.mons {
		out[i] = m.Addr()
	}
	return out
}

// follow applies the changes between the MON maps it has seen and mm, if
// mm is newer: it dials the voters added and closes those removed. The
// first map seen is the baseline and changes nothing, so the addresses
// a client was given stay in use (a MON reached through a proxy or an
// address translation keeps being reached that way) until the MONs
// behind them leave; if every MON it talks to left, it takes mm's voters.
func (c *Client) follow(mm MonMap) {
	voters := mm.Voters()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || mm.Epoch <= c.monEpoch || len(voters) == 0 {
		return
	}
	prev := c.voters
	c.monEpoch, c.voters = mm.Epoch, voters
	if prev == nil {
		return
	}
	left := func(a string) bool { return slices.Contains(prev, a) && !slices.Contains(voters, a) }
	var mons []*msgr.Client
	for _, m := range c.mons {
		if left(m.Addr()) {
			m.Close()
		} else {
			mons = append(mons, m)
		}
	}
	have, none := c.addrsLocked(), len(mons) == 0
	for _, a := range voters {
		if none || !slices.Contains(prev, a) && !slices.Contains(have, a) {
			mons = append(mons, msgr.Dial(a, c.kr, c.cfg))
		}
	}
	cur := c.mons[c.cur]
	c.mons = mons
	c.cur = max(0, slices.Index(c.mons, cur))
}

// ParseMonHost splits mon_host ("host:port,host:port" or with spaces).
func ParseMonHost(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == ';' })
}

// Close closes the connections.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, m := range c.mons {
		m.Close()
	}
}

// call sends to the current MON, moving to the next on a transport error
// or when a MON has no leader, until ctx ends.
func (c *Client) call(ctx context.Context, typ uint16, payload []byte) ([]byte, error) {
	var last error
	for attempt := 0; ; attempt++ {
		c.mu.Lock()
		m, n := c.mons[c.cur], len(c.mons)
		c.mu.Unlock()
		actx, cancel := context.WithTimeout(ctx, WaitFor+5*time.Second)
		rep, err := m.Call(actx, typ, payload)
		cancel()
		if err == nil {
			out := append([]byte(nil), rep.Payload...)
			rep.Release()
			return out, nil
		}
		var re *msgr.RemoteError
		if errors.As(err, &re) && re.Code != int32(syscall.EAGAIN) {
			return nil, fromRemote(err) // the MON answered: final
		}
		if errors.Is(err, msgr.ErrAuth) {
			return nil, err // a wrong key stays wrong
		}
		last = fromRemote(err) // unreachable or leaderless: try the next MON
		c.mu.Lock()
		if c.mons[c.cur] == m {
			c.cur = (c.cur + 1) % len(c.mons)
		}
		c.mu.Unlock()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %v", ErrNoMon, last)
		}
		if attempt%n == n-1 {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("%w: %v", ErrNoMon, last)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

// Command runs a MON command.
func (c *Client) Command(ctx context.Context, prefix string, args map[string]string) (Result, error) {
	b, _ := json.Marshal(Command{Prefix: prefix, Args: args})
	out, err := c.call(ctx, MsgCommand, b)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", prefix, err)
	}
	var r Result
	if err := json.Unmarshal(out, &r); err != nil {
		return Result{}, fmt.Errorf("%s: bad reply: %w", prefix, err)
	}
	return r, nil
}

// GetMap returns the map after have (nil: the current one), waiting for a
// newer epoch when wait is set; it returns have itself if none came.
func (c *Client) GetMap(ctx context.Context, have *osdmap.Map, wait bool) (*osdmap.Map, error) {
	req := MapRequest{Wait: wait}
	if have != nil {
		req.Have = have.Epoch
	}
	out, err := c.call(ctx, MsgGetMap, EncodeMapRequest(req))
	if err != nil {
		return nil, fmt.Errorf("get osd map: %w", err)
	}
	r, err := decodeMapReply(out)
	if err != nil {
		return nil, fmt.Errorf("get osd map: %w", err)
	}
	c.follow(r.Mons)
	m := have
	if r.Full != nil {
		if m, err = osdmap.Decode(r.Full); err != nil {
			return nil, fmt.Errorf("get osd map: %w", err)
		}
	}
	for _, b := range r.Incs {
		inc, err := osdmap.DecodeIncremental(b)
		if err != nil {
			return nil, fmt.Errorf("get osd map: %w", err)
		}
		if m == nil || inc.Epoch != m.Epoch+1 {
			continue
		}
		if m, err = m.Apply(inc); err != nil {
			return nil, fmt.Errorf("get osd map: epoch %d: %w", inc.Epoch, err)
		}
	}
	if m == nil {
		return nil, fmt.Errorf("get osd map: %w: empty reply", ErrInvalid)
	}
	return m, nil
}

// WaitEpoch returns a map of at least epoch e (one that includes a
// command's change, whichever MON answers), starting from have.
func (c *Client) WaitEpoch(ctx context.Context, have *osdmap.Map, e uint32) (*osdmap.Map, error) {
	for {
		m, err := c.GetMap(ctx, have, have != nil)
		if err != nil {
			return nil, err
		}
		if uint32(m.Epoch) >= e {
			return m, nil
		}
		have = m
		if ctx.Err() != nil {
			return nil, fmt.Errorf("wait for osd map epoch %d: %w", e, ctx.Err())
		}
	}
}

// Subscribe calls onMap with each new map (starting with the current one)
// until ctx ends; it is the caller's goroutine's loop.
func (c *Client) Subscribe(ctx context.Context, have *osdmap.Map, onMap func(*osdmap.Map)) {
	for ctx.Err() == nil {
		m, err := c.GetMap(ctx, have, have != nil)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		if have == nil || m.Epoch > have.Epoch {
			have = m
			onMap(m)
		}
	}
}

// FormatOSDIDs writes OSD ids comma-separated ("0,3,1"), as commands take
// them.
func FormatOSDIDs(ids []int32) string {
	parts := make([]string, len(ids))
	for i, o := range ids {
		parts[i] = strconv.Itoa(int(o))
	}
	return strings.Join(parts, ",")
}

// ParseOSDIDs reads comma-separated OSD ids, each "N" or "osd.N" (spaces
// around them allowed); "" is no ids. An id that is not a number is an
// error naming it.
func ParseOSDIDs(s string) ([]int32, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var ids []int32
	for _, f := range strings.Split(s, ",") {
		id, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(f), "osd."), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("bad osd id %q", f)
		}
		ids = append(ids, int32(id))
	}
	return ids, nil
}

// FormatVersion writes a PG log version (epoch, seq) as the "pg
// ready-to-merge" command's versions: "EPOCH'SEQ", as Ceph prints
// eversion_t.
func FormatVersion(v [2]uint64) string { return fmt.Sprintf("%d'%d", v[0], v[1]) }

// ParseVersion parses FormatVersion's form; any other string is an error naming it.
func ParseVersion(s string) ([2]uint64, error) {
	e, q, ok := strings.Cut(s, "'")
	ev, err1 := strconv.ParseUint(e, 10, 32)
	qv, err2 := strconv.ParseUint(q, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return [2]uint64{}, fmt.Errorf("version %q: want EPOCH'SEQ", s)
	}
	return [2]uint64{ev, qv}, nil
}

// ParsePGTemps reads the "osd pg-temp" command's pgs argument, as
// FormatPGTemps writes it.
func ParsePGTemps(s string) (map[osdmap.PGID][]int32, error) {
	sets := map[osdmap.PGID][]int32{}
	for _, f := range strings.Fields(s) {
		k, v, _ := strings.Cut(f, "=")
		pg, err := osdmap.ParsePGID(k)
		if err != nil {
			return nil, err
		}
		if sets[pg], err = ParseOSDIDs(v); err != nil {
			return nil, fmt.Errorf("pg %s: %w", pg, err)
		}
	}
	if len(sets) == 0 {
		return nil, errors.New("no pgs given")
	}
	return sets, nil
}

// FormatPGTemps writes pg_temp requests as the "osd pg-temp" command's
// pgs argument: "PGID=OSD,OSD,..." separated by spaces, in PG order; an
// empty list clears the PG's entry.
func FormatPGTemps(sets map[osdmap.PGID][]int32) string {
	parts := make([]string, 0, len(sets))
	for pg, osds := range sets {
		parts = append(parts, pg.String()+"="+FormatOSDIDs(osds))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// PGInterval is one entry of a PG's history kept by the MONs: an acting
// set (OSD ids; osdmap.NoOSD for an erasure-coded PG's empty positions)
// that activated in the interval that began at map epoch Epoch.
// Recovering says the set activated with objects still to recover or
// backfill onto some member; its primary records the interval again
// without it once they are all there (the MONs' sign that the PG's data
// has stopped moving, which pgp_num steps, the balancer and merges wait
// for).
type PGInterval struct {
	PG         osdmap.PGID `json:"-"`
	Epoch      uint32      `json:"epoch"`
	Acting     []int32     `json:"acting"`
	Recovering bool        `json:"recovering,omitempty"`
}

// PGHistoryArgs are the "pg history" command's arguments for ivs:
// entries ("PGID@EPOCH:OSD,OSD" separated by spaces, in order) and, if
// any is recovering, recovering: their indexes in entries, separated by
// spaces. (A MON that does not know the mark reads the entries alone.)
func PGHistoryArgs(ivs []PGInterval) map[string]string {
	parts := make([]string, 0, len(ivs))
	var rec []string
	for i, iv := range ivs {
		parts = append(parts, fmt.Sprintf("%s@%d:%s", iv.PG, iv.Epoch, FormatOSDIDs(iv.Acting)))
		if iv.Recovering {
			rec = append(rec, strconv.Itoa(i))
		}
	}
	args := map[string]string{"entries": strings.Join(parts, " ")}
	if len(rec) > 0 {
		args["recovering"] = strings.Join(rec, " ")
	}
	return args
}

// ParsePGHistoryArgs reads PGHistoryArgs's arguments: the intervals in
// entries' order. Errors: entries missing or malformed
// (ParsePGIntervals'), or a recovering index that is not one of them.
func ParsePGHistoryArgs(args map[string]string) ([]PGInterval, error) {
	ivs, err := ParsePGIntervals(args["entries"])
	if err != nil {
		return nil, err
	}
	for _, f := range strings.Fields(args["recovering"]) {
		i, err := strconv.Atoi(f)
		if err != nil || i < 0 || i >= len(ivs) {
			return nil, fmt.Errorf("pg history: recovering %q: want indexes of entries (0 to %d)", f, len(ivs)-1)
		}
		ivs[i].Recovering = true
	}
	return ivs, nil
}

// ParsePGIntervals reads FormatPGIntervals's text.
func ParsePGIntervals(s string) ([]PGInterval, error) {
	var out []PGInterval
	for _, f := range strings.Fields(s) {
		head, osds, ok := strings.Cut(f, ":")
		pgs, ep, ok2 := strings.Cut(head, "@")
		if !ok || !ok2 {
			return nil, fmt.Errorf("pg interval %q: want PGID@EPOCH:OSD[,OSD]", f)
		}
		pg, err := osdmap.ParsePGID(pgs)
		if err != nil {
			return nil, err
		}
		e, err := strconv.ParseUint(ep, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("pg interval %q: bad epoch", f)
		}
		iv := PGInterval{PG: pg, Epoch: uint32(e)}
		if iv.Acting, err = ParseOSDIDs(osds); err != nil || len(iv.Acting) == 0 {
			return nil, fmt.Errorf("pg interval %q: want its acting set: %v", f, err)
		}
		out = append(out, iv)
	}
	if len(out) == 0 {
		return nil, errors.New("no intervals given")
	}
	return out, nil
}

// FormatUpmapItems writes pg_upmap_items changes as the "osd
// pg-upmap-items" command's items argument: "PGID=FROM,TO,FROM,TO..."
// separated by spaces (FormatPGTemps' form); an empty list removes the
// PG's entry.
func FormatUpmapItems(items map[osdmap.PGID][]osdmap.UpmapItem) string {
	flat := make(map[osdmap.PGID][]int32, len(items))
	for pg, its := range items {
		flat[pg] = []int32{}
		for _, it := range its {
			flat[pg] = append(flat[pg], it.From, it.To)
		}
	}
	return FormatPGTemps(flat)
}

// ParseUpmapItems reads FormatUpmapItems' form: each PG's OSD ids taken
// two by two as (from, to) pairs; an odd count is an error.
func ParseUpmapItems(s string) (map[osdmap.PGID][]osdmap.UpmapItem, error) {
	flat, err := ParsePGTemps(s)
	if err != nil {
		return nil, err
	}
	out := make(map[osdmap.PGID][]osdmap.UpmapItem, len(flat))
	for pg, ids := range flat {
		if len(ids)%2 != 0 {
			return nil, fmt.Errorf("pg %s: %d OSD ids: want from,to pairs", pg, len(ids))
		}
		out[pg] = nil
		for i := 0; i < len(ids); i += 2 {
			out[pg] = append(out[pg], osdmap.UpmapItem{From: ids[i], To: ids[i+1]})
		}
	}
	return out, nil
}

// BalancerStatus is the "balancer status" command's reply, from the
// MONs' leader (`shoal balancer status`).
type BalancerStatus struct {
	Active        bool    `json:"active"`
	Mode          string  `json:"mode"`
	MaxDeviation  float64 `json:"upmap_max_deviation"`
	SleepInterval float64 `json:"sleep_interval"`
	MaxMisplaced  float64 `json:"target_max_misplaced_ratio"`
	// UpmapItems counts the PGs with pg_upmap_items in the map.
	UpmapItems int `json:"pg_upmap_items"`
	// Waiting is why a round would wait now ("" when it would not).
	Waiting string        `json:"waiting,omitempty"`
	Last    BalancerRound `json:"last_round"`
}

// BalancerRound is one round of the automatic balancer.
type BalancerRound struct {
	Started string  `json:"started,omitempty"` // RFC 3339, UTC
	Seconds float64 `json:"duration"`
	Epoch   uint32  `json:"epoch"`
	Result  string  `json:"result,omitempty"`
	PGs     int     `json:"pgs_moved"`
}
