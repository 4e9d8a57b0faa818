// Package cls is the registry of object-class methods: code that runs
// inside the OSD next to an object's data, invoked by name ("class.method")
// through the Call op, as Ceph's cls (used by RGW's bucket index, RBD's
// headers and locks). A method reads the object as it stands and adds
// writes to the op's transaction, so its read-modify-write is atomic and
// replicated like any write.
package cls

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/shoal-project/shoal/omap"
)

// Object is a method's view of its object: reads see the object before
// the request's ops; writes join the request's transaction.
type Object interface {
	Exists() bool
	Size() uint64
	Read(off, length uint64) ([]byte, error)
	GetXattr(name string) ([]byte, error)
	Xattrs() []string // the names of its extended attributes, sorted
	OmapGet(keys []string) (map[string][]byte, error)
	OmapList(startAfter, prefix string, max int) ([]omap.KV, bool, error)

	// Caller is the client instance that sent the request
	// ("client.NAME/NONCE", osdmap.InstanceName); empty for the OSD's own
	// requests. Now is the primary's clock.
	Caller() string
	Now() time.Time

	Write(off uint64, data []byte)
	WriteFull(data []byte)
	SetXattr(name string, value []byte)
	OmapSet(kvs []omap.KV)
	OmapRm(keys []string)
	Remove()
}

// Method runs with the object and the caller's input and returns output
// for the caller. Its error fails the whole request (nothing is applied);
// wrap ErrInvalid, ErrNotFound, ErrExists or ErrBusy to choose the code
// the client sees.
type Method func(o Object, in []byte) ([]byte, error)

// Errors methods return to choose the client's error code.
var (
	ErrInvalid  = errors.New("invalid input")
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("exists")
	ErrBusy     = errors.New("busy")
)

var (
	mu       sync.RWMutex
	methods  = map[string]Method{}
	readOnly = map[string]bool{}
)

// Register adds class.method; registering a name twice panics (a
// programming error).
func Register(class, method string, fn Method) {
	mu.Lock()
	defer mu.Unlock()
	name := class + "." + method
	if _, ok := methods[name]; ok {
		panic("cls: " + name + " registered twice")
	}
	methods[name] = fn
}

// RegisterRead adds class.method as a method that only reads (Ceph's
// CLS_METHOD_RD without CLS_METHOD_WR). Clients call it on the read path
// (osdop.CallRead), so a request resent after a failover runs again and
// returns its output; a write's resend is answered from the PG log,
// without output.
func RegisterRead(class, method string, fn Method) {
	Register(class, method, fn)
	mu.Lock()
	readOnly[class+"."+method] = true
	mu.Unlock()
}

// ReadOnly reports whether "class.method" was registered by
// RegisterRead.
func ReadOnly(name string) bool {
	mu.RLock()
	defer mu.RUnlock()
	return readOnly[name]
}

// Lookup finds a method by "class.method".
func Lookup(name string) (Method, bool) {
	mu.RLock()
	defer mu.RUnlock()
	m, ok := methods[name]
	return m, ok
}

// Names lists the registered methods.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	var out []string
	for n := range methods {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// NumopsInput is the input of numops.add and numops.mul (Ceph's
// cls_numops): the omap key holding a decimal number and the operand.
type NumopsInput struct {
	Key   string  `json:"key"`
	Value float64 `json:"value"`
}

func numop(f func(a, b float64) float64) Method {
	return func(o Object, in []byte) ([]byte, error) {
		var x NumopsInput
		if err := json.Unmarshal(in, &x); err != nil || x.Key == "" {
			return nil, fmt.Errorf("%w: want {\"key\":…, \"value\":…}", ErrInvalid)
		}
		cur := 0.0
		if o.Exists() {
			kv, err := o.OmapGet([]string{x.Key})
			if err != nil {
				return nil, err
			}
			if v, ok := kv[x.Key]; ok {
				if cur, err = strconv.ParseFloat(string(v), 64); err != nil {
					return nil, fmt.Errorf("%w: key %q holds %q, not a number", ErrInvalid, x.Key, v)
				}
			}
		}
		r := f(cur, x.Value)
		if math.IsInf(r, 0) || math.IsNaN(r) {
			return nil, fmt.Errorf("%w: result out of range", ErrInvalid)
		}
		s := strconv.FormatFloat(r, 'g', -1, 64)
		o.OmapSet([]omap.KV{{Key: x.Key, Value: []byte(s)}})
		return []byte(s), nil
	}
}

func init() {
	Register("numops", "add", numop(func(a, b float64) float64 { return a + b }))
	Register("numops", "mul", numop(func(a, b float64) float64 { return a * b }))
}
