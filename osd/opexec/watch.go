package opexec

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osdop"
)

// AttrWatchers holds an object's watchers ([]osdop.WatcherInfo, JSON),
// as Ceph keeps them in the object_info: a write records a watch, so
// every copy — and a new primary — knows it.
const AttrWatchers = "s.w"

// Watchers reads the object's watchers (none if it has none).
func Watchers(s objectstore.Store, c objectstore.Coll, oid string) ([]osdop.WatcherInfo, error) {
	b, err := s.GetAttr(c, oid, AttrWatchers)
	switch {
	case errors.Is(err, objectstore.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, StoreErr(err)
	}
	var ws []osdop.WatcherInfo
	if err := json.Unmarshal(b, &ws); err != nil {
		return nil, fmt.Errorf("%w: %s: watchers: %v", osdop.ErrCorrupt, oid, err)
	}
	return ws, nil
}

// watchOp is a Watch, Unwatch or WatchExpire op of a request by caller:
// the object's watcher list, changed, set on it.
func watchOp(o *Object, t *objectstore.Transaction, op *osdop.Op) error {
	ws, err := Watchers(o.Store, o.Coll, o.OID)
	if err != nil {
		return err
	}
	id := osdop.WatcherID{Instance: o.Caller, Cookie: op.Ver}
	if op.Code == osdop.WatchExpire {
		id.Instance = op.Name
	}
	if id.Instance == "" {
		return fmt.Errorf("%w: %s without a client instance", osdop.ErrInvalid, op.Code)
	}
	i := slices.IndexFunc(ws, func(w osdop.WatcherInfo) bool { return w.WatcherID == id })
	switch {
	case op.Code == osdop.Watch && i >= 0:
		ws[i].Timeout = uint32(op.Len)
	case op.Code == osdop.Watch:
		ws = append(ws, osdop.WatcherInfo{WatcherID: id, Timeout: uint32(op.Len)})
	case i >= 0:
		ws = slices.Delete(ws, i, i+1)
	default:
		return nil // not watching: nothing to remove
	}
	b, _ := json.Marshal(ws)
	t.SetAttr(o.Coll, o.OID, AttrWatchers, b)
	return nil
}

// listWatchers is the ListWatchers op.
func listWatchers(o *Object) (osdop.Result, error) {
	ws, err := Watchers(o.Store, o.Coll, o.OID)
	if err != nil {
		return osdop.Result{}, err
	}
	if ws == nil {
		ws = []osdop.WatcherInfo{}
	}
	b, _ := json.Marshal(ws)
	return osdop.Result{Data: b}, nil
}
