// Package caps parses and evaluates an entity's capabilities, modelled on
// cephx's (Ceph documentation, "User Management", section "Authorization
// (Capabilities)"; grammar after Ceph's src/mon/MonCap.cc and
// src/osd/OSDCap.cc).
//
// An entity has one capability string per service. A string is a list of
// grants separated by "," or ";":
//
//	mon: allow *                    every command
//	     allow r | w | x | rw | rwx   read commands; changes; auth commands (x)
//	     allow command "osd blocklist add"   one command, whatever the perms
//	     [allow] profile osd | mon | rbd | rgw | bootstrap-osd
//	osd: allow *                    every op, and the OSDs' admin commands
//	     allow r | w | x | rw | rwx | class-read | class-write   (several may follow "allow")
//	     ... pool=NAME | pool NAME    only that pool
//	     ... object_prefix PREFIX     only objects whose name starts with PREFIX
//	     [allow] profile rbd [pool=NAME] | rbd-read-only [pool=NAME] | rgw | osd
//
// On the OSDs, x is class-read and class-write: calling object-class
// methods that only read, and those that write. Grants that match an op add
// up: "allow r, allow w pool=a" gives rw on pool a. Nothing is allowed that
// no grant gives; an empty string gives nothing.
//
// A MON command needs a permission (Perm) that the MONs assign it, as
// Ceph's MonCommands.h does; a profile is a fixed list of grants, given in
// profileMon and profileOSD.
package caps

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ErrSyntax is returned for a capability string that does not parse.
var ErrSyntax = errors.New("caps: bad capability")

// Perm is a set of permissions.
type Perm uint8

// Permissions. On the MONs: Read for read commands, Write for changes,
// Exec for the auth commands (which need it beside Read or Write). On the
// OSDs: Read and Write on objects, ClassRead and ClassWrite for
// object-class methods that read or write. Admin is "*" alone: the OSDs'
// admin commands (scrub, repair), Ceph's allow_all.
const (
	Read Perm = 1 << iota
	Write
	Exec
	ClassRead
	ClassWrite
	Admin

	all = Read | Write | Exec | ClassRead | ClassWrite | Admin
)

// String is p in the grammar's letters: "*" for every permission, else
// r, w and x, then " class-read", " class-write", " admin" ("rw").
func (p Perm) String() string {
	if p == all {
		return "*"
	}
	var b strings.Builder
	for _, x := range []struct {
		p Perm
		s string
	}{{Read, "r"}, {Write, "w"}, {Exec, "x"}, {ClassRead, " class-read"}, {ClassWrite, " class-write"}, {Admin, " admin"}} {
		if p&x.p != 0 {
			b.WriteString(x.s)
		}
	}
	return strings.TrimSpace(b.String())
}

// Services are the services an entity holds caps for.
var Services = []string{"mon", "osd"}

// Mon is a parsed MON capability string.
type Mon struct {
	text     string
	perm     Perm
	commands map[string]bool
	profiles map[string]bool
}

// OSD is a parsed OSD capability string.
type OSD struct {
	text   string
	grants []osdGrant
}

type osdGrant struct {
	perm      Perm
	pool      string // "" any pool
	prefix    string
	hasPrefix bool
}

// profileMon is what each MON profile grants: permissions and commands.
// "osd" is the OSD daemons' (boot, reports, PG history, and reading the
// key database to authenticate clients); "rbd" lets a block client break
// a dead lock holder's lock by blocklisting it, as Ceph's profile rbd;
// "rgw" lets a gateway create its pools; "bootstrap-osd" may add osd.N
// entities with the osd profile only.
var profileMon = map[string]struct {
	perm     Perm
	commands []string
}{
	"mon":           {perm: all},
	"osd":           {perm: Read, commands: []string{"osd boot", "osd failure", "osd beacon", "osd fullness", "osd pg-temp", "pg ready-to-merge", "pg history", "pg history get", "auth dump"}},
	"rbd":           {perm: Read, commands: []string{"osd blocklist add"}},
	"rgw":           {perm: Read, commands: []string{"pool create"}},
	"bootstrap-osd": {perm: Read, commands: []string{"auth add"}},
}

// profileOSD is what each OSD profile grants, in the pool given with it
// (any pool without one). "rbd" follows Ceph's: rwx in the pool and
// class-read of rbd_children anywhere (clone parents' child lists).
var profileOSD = map[string][]osdGrant{
	"rbd":           {{perm: Read | Write | ClassRead | ClassWrite}, {perm: ClassRead, prefix: "rbd_children", hasPrefix: true}},
	"rbd-read-only": {{perm: Read | ClassRead}},
	"rgw":           {{perm: Read | Write | ClassRead | ClassWrite}},
	"osd":           {{perm: all}},
}

// ParseMon parses a MON capability string.
func ParseMon(s string) (*Mon, error) {
	m := &Mon{text: strings.TrimSpace(s), commands: map[string]bool{}, profiles: map[string]bool{}}
	grants, err := split(s)
	if err != nil {
		return nil, err
	}
	for _, g := range grants {
		toks, err := grantWords("mon", g)
		if err != nil {
			return nil, err
		}
		switch {
		case len(toks) == 2 && toks[0] == "profile":
			p, ok := profileMon[toks[1]]
			if !ok {
				return nil, fmt.Errorf("%w: mon: unknown profile %q (%s)", ErrSyntax, toks[1], strings.Join(slices.Sorted(maps.Keys(profileMon)), ", "))
			}
			m.profiles[toks[1]] = true
			m.perm |= p.perm
			for _, c := range p.commands {
				m.commands[c] = true
			}
		case len(toks) == 2 && toks[0] == "command":
			if toks[1] == "" {
				return nil, fmt.Errorf("%w: mon: empty command", ErrSyntax)
			}
			m.commands[toks[1]] = true
		case len(toks) == 1:
			p, err := rwx(toks[0], Exec, "mon")
			if err != nil {
				return nil, err
			}
			m.perm |= p
		default:
			return nil, fmt.Errorf("%w: mon %q: want allow *, allow rwx, allow command \"PREFIX\" or profile NAME", ErrSyntax, strings.Join(g, " "))
		}
	}
	return m, nil
}

// grantWords checks that grant g of service svc starts with "allow" or
// "profile" and returns its words after "allow".
func grantWords(svc string, g []string) ([]string, error) {
	switch g[0] {
	case "allow":
		return g[1:], nil
	case "profile":
		return g, nil
	}
	return nil, fmt.Errorf("%w: %s %q: a grant starts with \"allow\" or \"profile\"", ErrSyntax, svc, strings.Join(g, " "))
}

// rwx reads a permission word of service svc: "*", or letters r, w and x,
// x being the service's x (Exec on the MONs, both class permissions on
// the OSDs).
func rwx(s string, x Perm, svc string) (Perm, error) {
	if s == "*" {
		return all, nil
	}
	var p Perm
	for _, c := range s {
		switch c {
		case 'r':
			p |= Read
		case 'w':
			p |= Write
		case 'x':
			p |= x
		default:
			return 0, fmt.Errorf("%w: %s: %q: want *, r, w, x or a combination", ErrSyntax, svc, s)
		}
	}
	if p == 0 {
		return 0, fmt.Errorf("%w: %s: empty permission", ErrSyntax, svc)
	}
	return p, nil
}

// String is the capability string as given.
func (m *Mon) String() string {
	if m == nil {
		return ""
	}
	return m.text
}

// Allows reports whether m lets the holder run command prefix, which
// needs need: a grant of every bit of need, or of the command by name.
// A nil Mon allows nothing.
func (m *Mon) Allows(prefix string, need Perm) bool {
	if m == nil {
		return false
	}
	return m.perm&need == need || m.commands[prefix]
}

// Profile reports whether m was granted profile name.
func (m *Mon) Profile(name string) bool { return m != nil && m.profiles[name] }

// ParseOSD parses an OSD capability string.
func ParseOSD(s string) (*OSD, error) {
	o := &OSD{text: strings.TrimSpace(s)}
	grants, err := split(s)
	if err != nil {
		return nil, err
	}
	for _, g := range grants {
		toks, err := grantWords("osd", g)
		if err != nil {
			return nil, err
		}
		var gr osdGrant
		profile := ""
		for i := 0; i < len(toks); i++ {
			t := toks[i]
			next := func() (string, error) {
				if i+1 >= len(toks) {
					return "", fmt.Errorf("%w: osd %q: %s needs a value", ErrSyntax, strings.Join(g, " "), t)
				}
				i++
				return toks[i], nil
			}
			var err error
			switch {
			case t == "profile":
				if profile, err = next(); err != nil {
					return nil, err
				}
				if _, ok := profileOSD[profile]; !ok {
					return nil, fmt.Errorf("%w: osd: unknown profile %q (%s)", ErrSyntax, profile, strings.Join(slices.Sorted(maps.Keys(profileOSD)), ", "))
				}
			case strings.HasPrefix(t, "pool="):
				gr.pool = strings.TrimPrefix(t, "pool=")
			case t == "pool":
				gr.pool, err = next()
			case strings.HasPrefix(t, "object_prefix="):
				gr.prefix, gr.hasPrefix = strings.TrimPrefix(t, "object_prefix="), true
			case t == "object_prefix":
				gr.prefix, err = next()
				gr.hasPrefix = true
			case strings.HasPrefix(t, "namespace"):
				return nil, fmt.Errorf("%w: osd: namespaces are not supported", ErrSyntax)
			case t == "class-read":
				gr.perm |= ClassRead
			case t == "class-write":
				gr.perm |= ClassWrite
			default:
				var p Perm
				if p, err = rwx(t, ClassRead|ClassWrite, "osd"); err == nil {
					gr.perm |= p
				}
			}
			if err != nil {
				return nil, err
			}
			if gr.pool == "" && (t == "pool" || t == "pool=") {
				return nil, fmt.Errorf("%w: osd: empty pool name", ErrSyntax)
			}
		}
		if profile != "" {
			if gr.perm != 0 || gr.hasPrefix {
				return nil, fmt.Errorf("%w: osd %q: a profile takes only pool=NAME", ErrSyntax, strings.Join(g, " "))
			}
			for _, pg := range profileOSD[profile] {
				if !pg.hasPrefix { // the profile's pool grant
					pg.pool = gr.pool
				}
				o.grants = append(o.grants, pg)
			}
			continue
		}
		if gr.perm == 0 {
			return nil, fmt.Errorf("%w: osd %q: no permission (want *, r, w, x, class-read or class-write)", ErrSyntax, strings.Join(g, " "))
		}
		o.grants = append(o.grants, gr)
	}
	return o, nil
}

// String is the capability string as given.
func (o *OSD) String() string {
	if o == nil {
		return ""
	}
	return o.text
}

// Allows reports whether o lets the holder do what needs need to object
// oid of pool: the grants matching the pool and name together give every
// bit of need. A nil OSD allows nothing.
func (o *OSD) Allows(pool, oid string, need Perm) bool { return o.granted(pool, &oid)&need == need }

// AllowsPool reports whether o gives need on every object of pool (a
// grant without an object prefix): what a listing or a pool-wide command
// needs.
func (o *OSD) AllowsPool(pool string, need Perm) bool { return o.granted(pool, nil)&need == need }

// granted is the union of the grants matching pool and object *oid (nil:
// every object of the pool, so only grants without a prefix).
func (o *OSD) granted(pool string, oid *string) Perm {
	if o == nil {
		return 0
	}
	var have Perm
	for _, g := range o.grants {
		if (g.pool == "" || g.pool == pool) && (!g.hasPrefix || oid != nil && strings.HasPrefix(*oid, g.prefix)) {
			have |= g.perm
		}
	}
	return have
}

// Entity is an entity's parsed capabilities.
type Entity struct {
	Mon *Mon
	OSD *OSD
}

// Parse parses caps, service ("mon", "osd") → capability string. An
// absent service gives nothing; an unknown one is an error.
func Parse(caps map[string]string) (Entity, error) {
	var e Entity
	for svc, s := range caps {
		var err error
		switch svc {
		case "mon":
			e.Mon, err = ParseMon(s)
		case "osd":
			e.OSD, err = ParseOSD(s)
		default:
			err = fmt.Errorf("%w: unknown service %q (want mon or osd)", ErrSyntax, svc)
		}
		if err != nil {
			return Entity{}, err
		}
	}
	return e, nil
}

// Default is the caps of an entity found in a keyring file without caps
// lines (a cluster made before caps existed, or a hand-written keyring):
// mon.* everything, osd.* the OSD profile, client.admin everything, and
// any other entity nothing.
func Default(entity string) map[string]string {
	typ, _, _ := strings.Cut(entity, ".")
	switch {
	case typ == "mon", entity == "client.admin":
		return map[string]string{"mon": "allow *", "osd": "allow *"}
	case typ == "osd":
		return map[string]string{"mon": "profile osd", "osd": "allow *"}
	}
	return nil
}

// split cuts s into grants at "," and ";" and each grant into words,
// outside double quotes (which are removed); "allow profile x" loses its
// "allow".
func split(s string) ([][]string, error) {
	var grants [][]string
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	endWord := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	endGrant := func() {
		endWord()
		if len(words) > 1 && words[0] == "allow" && words[1] == "profile" {
			words = words[1:]
		}
		if len(words) > 0 {
			grants = append(grants, words)
		}
		words = nil
	}
	for _, c := range s {
		switch {
		case c == '"':
			quoted = !quoted
			inWord = true
		case quoted:
			w.WriteRune(c)
		case c == ',' || c == ';':
			endGrant()
		case c == ' ' || c == '\t' || c == '\n':
			endWord()
		default:
			w.WriteRune(c)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("%w: %q: unterminated quote", ErrSyntax, s)
	}
	endGrant()
	return grants, nil
}

// Table finds entities' parsed caps, as a MON or an OSD does for each
// command or op: an entity's entry in the MONs' key database; else its
// keyring file entry, its own or its type's ("osd." for osd.3), with that
// entry's caps lines or, without any, Default(entity); else nothing. With
// open (a daemon running without a keyring file: every entity shares one
// key, so any may claim any name) an entity in neither has every
// permission. A Table is read-only once made; safe for concurrent use.
type Table struct {
	db, file map[string]Entity
	open     bool
}

// NewTable parses db (entity → service → caps, from the key database) and
// file (the keyring file's entries; a nil caps map: no caps lines). An
// entry that does not parse is an error naming it.
func NewTable(db, file map[string]map[string]string, open bool) (*Table, error) {
	t := &Table{db: make(map[string]Entity, len(db)), file: make(map[string]Entity, len(file)), open: open}
	for n, c := range db {
		e, err := Parse(c)
		if err != nil {
			return nil, fmt.Errorf("caps of %s: %w", n, err)
		}
		t.db[n] = e
	}
	for n, c := range file {
		if c == nil {
			c = Default(n)
		}
		e, err := Parse(c)
		if err != nil {
			return nil, fmt.Errorf("keyring caps of %s: %w", n, err)
		}
		t.file[n] = e
	}
	return t, nil
}

// Lookup returns entity's caps.
func (t *Table) Lookup(entity string) Entity {
	if e, ok := t.db[entity]; ok {
		return e
	}
	if e, ok := t.file[entity]; ok {
		return e
	}
	typ, _, _ := strings.Cut(entity, ".")
	if e, ok := t.file[typ+"."]; ok {
		return e
	}
	if t.open {
		return openEntity
	}
	return Entity{}
}

var openEntity = Entity{Mon: &Mon{text: "allow *", perm: all}, OSD: &OSD{text: "allow *", grants: []osdGrant{{perm: all}}}}
