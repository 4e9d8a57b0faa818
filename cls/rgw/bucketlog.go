package rgw

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/shoal-project/shoal/cls"
)

// Bucket logging's pending batch (S3 server access logging; RGW's bucket
// logging, Ceph docs "Bucket Logging"): the records of a logged bucket
// accumulate in one object of the gateway's log pool until the batch is
// committed as an object of the log bucket. Its xattrs:
//
//	"since"  when the batch's first record was appended (Unix ns, decimal)
//	"seq"    how many batches were committed from it (decimal)
//
// LogAppend adds a record; LogTrim removes the first N bytes once they are
// stored in the log bucket, guarded by the batch number the committer
// read, so a committer that stalls and comes back cannot trim twice.

// LogAppendOut is what log_append answers: the batch's start.
type LogAppendOut struct {
	Since int64 `json:"since"` // Unix ns
}

// LogTrimIn is log_trim's input: the committed bytes and the batch
// number they were read under.
type LogTrimIn struct {
	N   uint64 `json:"n"`
	Seq uint64 `json:"seq"`
}

func xattrInt(o cls.Object, name string) (int64, error) {
	v, err := o.GetXattr(name)
	if err != nil || len(v) == 0 {
		return 0, nil // absent: zero
	}
	return strconv.ParseInt(string(v), 10, 64)
}

// logAppend appends the input (one or more whole records) to the batch,
// starting one (its "since") if there is none.
func logAppend(o cls.Object, in []byte) ([]byte, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("%w: no record", cls.ErrInvalid)
	}
	since, err := xattrInt(o, "since")
	if err != nil {
		return nil, err
	}
	if !o.Exists() || o.Size() == 0 || since == 0 {
		since = o.Now().UnixNano()
		o.SetXattr("since", []byte(strconv.FormatInt(since, 10)))
	}
	o.Write(o.Size(), in)
	return json.Marshal(LogAppendOut{Since: since})
}

// logTrim drops the batch's first N bytes (committed) and counts the
// batch; what was appended after the committer read stays, as the next
// batch, which starts now. ErrBusy if another committer trimmed first.
func logTrim(o cls.Object, in []byte) ([]byte, error) {
	var t LogTrimIn
	if err := json.Unmarshal(in, &t); err != nil {
		return nil, fmt.Errorf("%w: %v", cls.ErrInvalid, err)
	}
	if !o.Exists() {
		return nil, fmt.Errorf("%w: no batch", cls.ErrNotFound)
	}
	seq, err := xattrInt(o, "seq")
	if err != nil {
		return nil, err
	}
	if uint64(seq) != t.Seq {
		return nil, fmt.Errorf("%w: batch %d was committed already (now %d)", cls.ErrBusy, t.Seq, seq)
	}
	if t.N > o.Size() {
		return nil, fmt.Errorf("%w: trim %d of %d bytes", cls.ErrInvalid, t.N, o.Size())
	}
	rest, err := o.Read(t.N, o.Size()-t.N)
	if err != nil {
		return nil, err
	}
	o.WriteFull(rest)
	since := int64(0)
	if len(rest) > 0 {
		since = o.Now().UnixNano()
	}
	o.SetXattr("since", []byte(strconv.FormatInt(since, 10)))
	o.SetXattr("seq", []byte(strconv.FormatUint(t.Seq+1, 10)))
	return nil, nil
}

// LogSince decodes a batch's "since" xattr (zero: no batch).
func LogSince(v []byte) time.Time {
	ns, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

func init() {
	cls.Register("rgw", "log_append", logAppend)
	cls.Register("rgw", "log_trim", logTrim)
}
