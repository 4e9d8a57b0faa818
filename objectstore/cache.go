package objectstore

import (
	"container/list"
	"sync"
)

// onodeCache keeps recently used decoded onodes (BlueStore's onode cache),
// bounded by an estimate of their bytes. Cached onodes are shared and never
// modified. The committer replaces or drops the entries a group changed in
// the same locked step that retires the group's freed blocks, so a cached
// onode never refers to blocks that can be reused.
type onodeCache struct {
	mu     sync.Mutex
	ll     *list.List // front: most recent
	m      map[string]*list.Element
	bytes  int
	budget int
}

type cacheEntry struct {
	key  string
	o    *onode
	size int
}

func newOnodeCache(budget int) *onodeCache {
	return &onodeCache{ll: list.New(), m: map[string]*list.Element{}, budget: budget}
}

func onodeBytes(key string, o *onode) int {
	n := 128 + len(key) + len(o.Inline) + 32*len(o.Extents)
	for _, x := range o.Extents {
		n += 4 * len(x.CRCs)
	}
	for k, v := range o.Attrs {
		n += 48 + len(k) + len(v)
	}
	return n
}

// resize sets the cache's budget and evicts the least recent entries
// beyond it.
func (c *onodeCache) resize(budget int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.budget = budget
	c.trim()
}

// held is the estimate of the bytes the cached onodes hold.
func (c *onodeCache) held() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// trim evicts the least recent entries until the cache fits its budget
// (c.mu held).
func (c *onodeCache) trim() {
	for c.bytes > max(c.budget, 0) && c.ll.Len() > 0 {
		e := c.ll.Back()
		ce := e.Value.(*cacheEntry)
		c.ll.Remove(e)
		delete(c.m, ce.key)
		c.bytes -= ce.size
	}
}

func (c *onodeCache) get(key string) (*onode, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.budget <= 0 {
		return nil, false
	}
	e, ok := c.m[key]
	if !ok {
		return nil, false
	}
	c.ll.MoveToFront(e)
	return e.Value.(*cacheEntry).o, true
}

// put caches o under key (replacing any entry); a nil o drops the key.
func (c *onodeCache) put(key string, o *onode) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		c.bytes -= e.Value.(*cacheEntry).size
		c.ll.Remove(e)
		delete(c.m, key)
	}
	if o == nil || c.budget <= 0 {
		return
	}
	size := onodeBytes(key, o)
	if size > c.budget/8 { // one huge onode must not flush everything
		return
	}
	c.m[key] = c.ll.PushFront(&cacheEntry{key, o, size})
	c.bytes += size
	c.trim()
}
