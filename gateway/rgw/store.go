package rgw

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/shoal-project/shoal/client"
	clsrgw "github.com/shoal-project/shoal/cls/rgw"
	"github.com/shoal-project/shoal/config"
	"github.com/shoal-project/shoal/gateway/s3err"
	"github.com/shoal-project/shoal/osdop"
)

// Pools names the gateway's RADOS pools (Ceph: the zone's placement
// pools). Each may have its own protection and CRUSH rule: put Index on
// fast devices and Data on an erasure-coded pool over HDDs.
type Pools struct {
	Meta  string // users, access keys, bucket entry points (omap: needs a replicated pool)
	Index string // bucket index shards (omap: replicated)
	Data  string // object heads and tails (replicated or erasure-coded)
	NonEC string // multipart upload state (omap: replicated)
	Log   string // garbage-collection queue (omap: replicated)
}

// DefaultPools are RGW's default zone pool names.
var DefaultPools = Pools{
	Meta:  "default.rgw.meta",
	Index: "default.rgw.buckets.index",
	Data:  "default.rgw.buckets.data",
	NonEC: "default.rgw.buckets.non-ec",
	Log:   "default.rgw.log",
}

// Options are the gateway's layout and behaviour; FromConfig reads them
// from the cluster configuration ([client.rgw.NAME], [client], [global]).
type Options struct {
	Pools       Pools
	StripeSize  int64         // rgw_obj_stripe_size: bytes per RADOS object of an S3 object
	ChunkSize   int64         // rgw_max_chunk_size: bytes per RADOS write (and of the head)
	WindowSize  int64         // rgw_put_obj_min_window_size: bytes of one PUT in flight
	IndexShards int           // rgw_override_bucket_index_max_shards (0: DefaultIndexShards)
	RangeShards int           // rgw_bucket_index_range_shards: sub-shards per key range (0: DefaultRangeShards)
	DNSName     string        // rgw_dns_name: virtual-host-style addressing under this domain
	GCMinWait   time.Duration // rgw_gc_obj_min_wait: how long garbage waits (in-flight GETs of it finish)
	GCPeriod    time.Duration // rgw_gc_processor_period: how often the GC worker runs
	PoolSize    int           // replicas of the pools the gateway creates (0: the cluster's osd_pool_default_size)
	// MultiDelMaxAIO (rgw_multi_obj_del_max_aio; 0:
	// DefaultMultiDelMaxAIO) is how many keys of one DeleteObjects
	// request are removed at once.
	MultiDelMaxAIO int
	// MaxObjsPerShard (rgw_max_objs_per_shard; 0 or rgw_dynamic_resharding
	// false: never) is the entry count of an index shard past which the
	// gateway splits the shard's range on its own (dynamic resharding).
	MaxObjsPerShard int64
	// ReshardPeriod (rgw_reshard_thread_interval) is how often queued
	// buckets are resharded.
	ReshardPeriod time.Duration
	// MaxMultipartSize is the largest object a multipart upload may
	// complete to (0: MaxMultipartSize, S3's 5 TiB); tests lower it.
	MaxMultipartSize int64
	// LCDebugInterval (rgw_lc_debug_interval; 0: off) is the length of a
	// lifecycle day in tests: rules' days count in it, and passes run
	// that often at any hour.
	LCDebugInterval time.Duration
	// LCWorkTime (rgw_lifecycle_work_time, "HH:MM-HH:MM" of local time;
	// "": 00:00-06:00) is when lifecycle passes run.
	LCWorkTime string
	// NoLCThreads (rgw_enable_lc_threads false) keeps this gateway from
	// running lifecycle passes (`shoal lc process` still does).
	NoLCThreads bool
	// LCLockTTL (rgw_lc_lock_max_time; 0: 90 s) is how long a lifecycle
	// pass holds the cluster's lifecycle lock between renewals: how long
	// a pass killed mid-way keeps others from starting.
	LCLockTTL time.Duration
	// CryptRequireSSL (rgw_crypt_require_ssl) refuses SSE-C requests
	// that do not come over TLS (the customer's key travels with them).
	CryptRequireSSL bool
	// LogRollTime (rgw_bucket_logging_obj_roll_time; 0:
	// DefaultLogRollTime) is how long a logged bucket's access log
	// records gather before they are committed (bucketlog.go).
	LogRollTime time.Duration
	Logger      *slog.Logger
	// Clock times the background passes (GC, lifecycle, dynamic
	// resharding), GC due times, the lifecycle's "now" and work window,
	// and the cluster-wide locks' leases; nil: the real clock. Object,
	// upload and bucket timestamps, caches and the index's pending grace
	// keep real time.
	Clock clockwork.Clock
}

// DefaultIndexShards is the shard count of a new bucket's index when
// rgw_override_bucket_index_max_shards is 0 (RGW's default,
// rgw_bucket_index_max_shards = 11).
const DefaultIndexShards = 11

// DefaultMultiDelMaxAIO is how many keys of one DeleteObjects request are
// removed at once when rgw_multi_obj_del_max_aio is not set (RGW's
// default, 16, in rgw.yaml.in).
const DefaultMultiDelMaxAIO = 16

// OptionsFromConfig reads Options from an entity's configuration (e.g.
// client.rgw.gateway: [global], [client], [client.rgw.gateway]).
func OptionsFromConfig(c *config.Config) Options {
	secs := func(n string) time.Duration { return time.Duration(c.Seconds(n) * float64(time.Second)) }
	return Options{
		Pools:           DefaultPools,
		StripeSize:      int64(c.Size("rgw_obj_stripe_size")),
		ChunkSize:       int64(c.Size("rgw_max_chunk_size")),
		WindowSize:      int64(c.Size("rgw_put_obj_min_window_size")),
		IndexShards:     int(c.Int("rgw_override_bucket_index_max_shards")),
		RangeShards:     int(c.Int("rgw_bucket_index_range_shards")),
		DNSName:         c.String("rgw_dns_name"),
		GCMinWait:       secs("rgw_gc_obj_min_wait"),
		GCPeriod:        secs("rgw_gc_processor_period"),
		ReshardPeriod:   secs("rgw_reshard_thread_interval"),
		LCDebugInterval: max(0, secs("rgw_lc_debug_interval")),
		LCWorkTime:      c.String("rgw_lifecycle_work_time"),
		NoLCThreads:     !c.Bool("rgw_enable_lc_threads"),
		LCLockTTL:       secs("rgw_lc_lock_max_time"),
		CryptRequireSSL: c.Bool("rgw_crypt_require_ssl"),
		LogRollTime:     secs("rgw_bucket_logging_obj_roll_time"),
		MultiDelMaxAIO:  max(1, int(c.Int("rgw_multi_obj_del_max_aio"))),
		MaxObjsPerShard: func() int64 {
			if !c.Bool("rgw_dynamic_resharding") {
				return 0
			}
			return c.Int("rgw_max_objs_per_shard")
		}(),
	}
}

func (o *Options) setDefaults() {
	if o.Pools == (Pools{}) {
		o.Pools = DefaultPools
	}
	if o.StripeSize <= 0 {
		o.StripeSize = 4 << 20
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = 4 << 20
	}
	o.ChunkSize = min(o.ChunkSize, o.StripeSize)
	if o.WindowSize < o.ChunkSize {
		o.WindowSize = max(o.ChunkSize, 16<<20)
	}
	if o.IndexShards <= 0 {
		o.IndexShards = DefaultIndexShards
	}
	if o.RangeShards <= 0 {
		o.RangeShards = DefaultRangeShards
	}
	if o.MultiDelMaxAIO <= 0 {
		o.MultiDelMaxAIO = DefaultMultiDelMaxAIO
	}
	if o.GCPeriod <= 0 {
		o.GCPeriod = time.Hour
	}
	if o.LCLockTTL <= 0 {
		o.LCLockTTL = 90 * time.Second
	}
	if o.LogRollTime <= 0 {
		o.LogRollTime = DefaultLogRollTime
	}
	if o.LCWorkTime == "" {
		o.LCWorkTime = "00:00-06:00"
	}
	if o.ReshardPeriod <= 0 {
		o.ReshardPeriod = 10 * time.Minute
	}
	if o.MaxMultipartSize <= 0 {
		o.MaxMultipartSize = MaxMultipartSize
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
}

// Store is the gateway's view of the cluster: users, buckets, objects,
// their index and the GC queue. It keeps no state a second gateway could
// contradict beyond short-lived caches that the bucket index validates
// (see LookupBucket). Safe for concurrent use.
type Store struct {
	conn                          *client.Conn
	opt                           Options
	meta, index, data, nonec, log *client.Pool
	batch                         *indexBatcher  // index updates, coalesced per shard
	async                         sync.WaitGroup // completions in flight (completeAsync)
	asyncSlots                    chan struct{}  // bounds them
	lcWorkStart, lcWorkEnd        int            // LCWorkTime, minutes of the day

	// crash injection for tests (export_test.go): "before-head" stops a
	// PUT after its tails, "before-complete" after its head, as a gateway
	// killed there would
	failpoint    string
	pendingGrace time.Duration
	listReads    atomic.Int64 // index shard reads by listings (shown by the listing benchmark)

	mu      sync.Mutex
	reshard map[string]bool         // buckets whose shards passed MaxObjsPerShard (dynamic resharding queue)
	buckets map[string]cachedBucket // name → info, validated by the index
	keys    map[string]cachedKey    // access key → secret and user
	names   map[string]cachedName   // user → display name
	access  map[string]cachedAccess // user → caps and policies (userpolicy.go)
	usage   map[string]cachedUsage  // bucket or "user." + uid → index totals (quota.go)
	sseKeys masterKeys              // SSE-S3 master keys (sse.go)
}

type cachedBucket struct {
	b    *Bucket
	when time.Time
}

type cachedKey struct {
	uid, secret string
	when        time.Time
}

// cacheTTL bounds how long a gateway trusts cached users and keys (a
// removed key stops working within it everywhere).
const cacheTTL = 5 * time.Second

// OpenStore opens (creating them if missing, replicated with the
// cluster's defaults) the gateway's pools.
func OpenStore(ctx context.Context, conn *client.Conn, opt Options) (*Store, error) {
	opt.setDefaults()
	lcStart, lcEnd, err := parseWorkTime(opt.LCWorkTime)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	s := &Store{lcWorkStart: lcStart, lcWorkEnd: lcEnd, conn: conn, opt: opt, asyncSlots: make(chan struct{}, maxAsyncCompletions), buckets: map[string]cachedBucket{}, keys: map[string]cachedKey{}, names: map[string]cachedName{}, access: map[string]cachedAccess{}, usage: map[string]cachedUsage{}, reshard: map[string]bool{}, pendingGrace: defaultPendingGrace}
	for _, p := range []struct {
		name  string
		pgNum string
		dst   **client.Pool
	}{{opt.Pools.Meta, "8", &s.meta}, {opt.Pools.Index, "", &s.index}, {opt.Pools.Data, "", &s.data},
		{opt.Pools.NonEC, "8", &s.nonec}, {opt.Pools.Log, "8", &s.log}} {
		pool, err := conn.Pool(ctx, p.name)
		if errors.Is(err, client.ErrPoolNotFound) {
			args := map[string]string{"name": p.name}
			if p.pgNum != "" {
				args["pg_num"] = p.pgNum
			}
			if opt.PoolSize > 0 {
				args["size"] = strconv.Itoa(opt.PoolSize)
			}
			if _, err := conn.MonCommand(ctx, "pool create", args); err != nil {
				if !errors.Is(err, client.ErrExists) && !strings.Contains(err.Error(), "exists") {
					return nil, fmt.Errorf("gateway: create pool %s: %w", p.name, err)
				}
			}
			pool, err = conn.Pool(ctx, p.name)
			// another gateway made it: the map the MONs serve may not have
			// it yet for a moment
			for try := 0; errors.Is(err, client.ErrPoolNotFound) && try < 50; try++ {
				select {
				case <-ctx.Done():
					return nil, fmt.Errorf("gateway: pool %s: %w", p.name, ctx.Err())
				case <-time.After(100 * time.Millisecond):
				}
				if rerr := conn.RefreshMap(ctx); rerr != nil {
					return nil, fmt.Errorf("gateway: pool %s: %w", p.name, rerr)
				}
				pool, err = conn.Pool(ctx, p.name)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("gateway: pool %s: %w", p.name, err)
		}
		*p.dst = pool
	}
	s.batch = newIndexBatcher(s.index)
	return s, nil
}

// Options returns the options the store runs with (defaults filled in).
func (s *Store) Options() Options { return s.opt }

// NewTag returns a random identifier for one write (names its tails).
func NewTag() string {
	b := make([]byte, 12)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ---- users ----

// User is an S3 user (Ceph: an RGW user) with its access keys.
type User struct {
	ID          string    `json:"id"`
	DisplayName string    `json:"display_name"`
	Email       string    `json:"email,omitempty"`
	Keys        []Key     `json:"keys"`
	Created     time.Time `json:"created"`
	// Caps are the user's administrative capabilities, by type (RGW's
	// user caps: "user-policy" → "read", "write" or "*"; userpolicy.go).
	Caps map[string]string `json:"caps,omitempty"`
	// Policies are the user's inline IAM policies, by name (IAM's
	// PutUserPolicy; the gateway parses and evaluates them).
	Policies map[string]string `json:"policies,omitempty"`
	// MaxBuckets bounds the buckets the user may own (0: the default,
	// DefaultMaxBuckets; -1: no limit); UserQuota bounds all its buckets
	// together, BucketQuota each of them (quota.go).
	MaxBuckets  int   `json:"max_buckets,omitempty"`
	UserQuota   Quota `json:"user_quota"`
	BucketQuota Quota `json:"bucket_quota"`
}

// Key is an access key pair.
type Key struct {
	AccessKey string `json:"access_key"`
	SecretKey string `json:"secret_key"`
}

// Errors of user and bucket administration (errors.Is).
var (
	ErrUserExists    = errors.New("user exists")
	ErrNoSuchUser    = errors.New("no such user")
	ErrKeyExists     = errors.New("access key in use")
	ErrNoSuchKeyID   = errors.New("no such access key")
	ErrUserHasBucket = errors.New("user owns buckets")
)

const (
	userPrefix  = "user."    // meta: user.<uid> → JSON User
	keyPrefix   = "key."     // meta: key.<access key> → uid
	usersObj    = "users"    // meta omap: uid → ""
	bucketObjP  = "bucket."  // meta: bucket.<name> → JSON Bucket
	userBuckets = ".buckets" // meta omap user.<uid>.buckets: name → ""
)

// uidRE is a user id: 1-64 of A-Z a-z 0-9 _ . @ -, after an optional
// "TENANT$" (tenant.go).
var uidRE = regexp.MustCompile(`^([A-Za-z0-9_]{1,64}\$)?[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$`)

func randomKey(n int, alphabet string) string {
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// NewKey returns a random access key (20 upper-case letters and digits)
// and secret (40 characters), the shapes AWS and RGW use.
func NewKey() Key {
	return Key{
		AccessKey: randomKey(20, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
		SecretKey: randomKey(40, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"),
	}
}

// CreateUser adds a user with one key (k, or a generated one if k is
// zero). ErrUserExists if the uid is taken, ErrKeyExists if the access
// key is.
func (s *Store) CreateUser(ctx context.Context, uid, display, email string, k Key) (*User, error) {
	if !uidRE.MatchString(uid) {
		return nil, fmt.Errorf("user %q: %w: ids are 1-64 of A-Z a-z 0-9 _ . @ -, after an optional TENANT$ (1-64 of A-Z a-z 0-9 _)", uid, client.ErrInvalid)
	}
	if k == (Key{}) {
		k = NewKey()
	}
	if k.AccessKey == "" || k.SecretKey == "" {
		return nil, fmt.Errorf("user %q: %w: access and secret key both needed", uid, client.ErrInvalid)
	}
	u := &User{ID: uid, DisplayName: display, Email: email, Created: time.Now().UTC().Truncate(time.Second)}
	if u.DisplayName == "" {
		u.DisplayName = uid
	}
	b, _ := json.Marshal(u)
	err := operate(ctx, s.meta, userPrefix+uid, []osdop.Op{{Code: osdop.Create, Exclusive: true}, {Code: osdop.WriteFull, Data: b}})
	if errors.Is(err, client.ErrExists) {
		return nil, fmt.Errorf("user %q: %w", uid, ErrUserExists)
	}
	if err != nil {
		return nil, fmt.Errorf("user %q: %w", uid, err)
	}
	if err := s.meta.OmapSet(ctx, usersObj, []client.KV{{Key: uid}}); err != nil {
		return nil, fmt.Errorf("user %q: %w", uid, err)
	}
	if _, err := s.AddKey(ctx, uid, k); err != nil {
		return nil, err
	}
	return s.GetUser(ctx, uid)
}

// GetUser reads a user (ErrNoSuchUser).
func (s *Store) GetUser(ctx context.Context, uid string) (*User, error) {
	b, err := s.meta.Read(ctx, userPrefix+uid, 0, 0)
	if errors.Is(err, client.ErrNotFound) {
		return nil, fmt.Errorf("user %q: %w", uid, ErrNoSuchUser)
	}
	if err != nil {
		return nil, fmt.Errorf("user %q: %w", uid, err)
	}
	u := &User{}
	if err := json.Unmarshal(b, u); err != nil {
		return nil, fmt.Errorf("user %q: %w", uid, err)
	}
	return u, nil
}

// updateUser rewrites a user's record with fn's change (ErrNoSuchUser).
func (s *Store) updateUser(ctx context.Context, uid string, fn func(u *User) error) (*User, error) {
	u, err := updateJSON(ctx, s.meta, userPrefix+uid, fn)
	if errors.Is(err, client.ErrNotFound) {
		return nil, fmt.Errorf("user %q: %w", uid, ErrNoSuchUser)
	}
	if err != nil {
		return nil, fmt.Errorf("user %q: %w", uid, err)
	}
	return u, nil
}

// AddKey gives the user another access key (generated if k is zero).
func (s *Store) AddKey(ctx context.Context, uid string, k Key) (Key, error) {
	if k == (Key{}) {
		k = NewKey()
	}
	if _, err := s.GetUser(ctx, uid); err != nil {
		return Key{}, err
	}
	b, _ := json.Marshal(cachedKeyRecord{UID: uid, Secret: k.SecretKey})
	err := operate(ctx, s.meta, keyPrefix+k.AccessKey, []osdop.Op{{Code: osdop.Create, Exclusive: true}, {Code: osdop.WriteFull, Data: b}})
	if errors.Is(err, client.ErrExists) {
		return Key{}, fmt.Errorf("access key %s: %w", k.AccessKey, ErrKeyExists)
	}
	if err != nil {
		return Key{}, err
	}
	_, err = s.updateUser(ctx, uid, func(u *User) error {
		u.Keys = append(u.Keys, k)
		return nil
	})
	return k, err
}

type cachedKeyRecord struct {
	UID    string `json:"uid"`
	Secret string `json:"secret"`
}

// RemoveKey revokes an access key.
func (s *Store) RemoveKey(ctx context.Context, uid, access string) error {
	_, err := s.updateUser(ctx, uid, func(u *User) error {
		for i, k := range u.Keys {
			if k.AccessKey == access {
				u.Keys = append(u.Keys[:i], u.Keys[i+1:]...)
				return nil
			}
		}
		return fmt.Errorf("user %q: access key %s: %w", uid, access, ErrNoSuchKeyID)
	})
	if err != nil {
		return err
	}
	if err := s.meta.Remove(ctx, keyPrefix+access); err != nil && !errors.Is(err, client.ErrNotFound) {
		return err
	}
	s.mu.Lock()
	delete(s.keys, access)
	s.mu.Unlock()
	return nil
}

// ListUsers returns every user id, sorted.
func (s *Store) ListUsers(ctx context.Context) ([]string, error) {
	return omapKeys(ctx, s.meta, usersObj)
}

// RemoveUser deletes a user and its keys; ErrUserHasBucket while it owns
// buckets.
func (s *Store) RemoveUser(ctx context.Context, uid string) error {
	u, err := s.GetUser(ctx, uid)
	if err != nil {
		return err
	}
	names, err := s.UserBuckets(ctx, uid)
	if err != nil {
		return err
	}
	if len(names) > 0 {
		return fmt.Errorf("user %q: %w (%s); remove them first", uid, ErrUserHasBucket, strings.Join(names, ", "))
	}
	for _, k := range u.Keys {
		if err := s.meta.Remove(ctx, keyPrefix+k.AccessKey); err != nil && !errors.Is(err, client.ErrNotFound) {
			return err
		}
		s.mu.Lock()
		delete(s.keys, k.AccessKey)
		s.mu.Unlock()
	}
	if err := s.meta.Remove(ctx, userPrefix+uid); err != nil && !errors.Is(err, client.ErrNotFound) {
		return err
	}
	return s.meta.OmapRm(ctx, usersObj, []string{uid})
}

// LookupKey returns the user id and secret of an access key, from a cache
// at most cacheTTL old (s3err.InvalidAccessKeyID if unknown).
func (s *Store) LookupKey(ctx context.Context, access string) (uid, secret string, err error) {
	now := time.Now()
	s.mu.Lock()
	c, ok := s.keys[access]
	s.mu.Unlock()
	if ok && now.Sub(c.when) < cacheTTL {
		return c.uid, c.secret, nil
	}
	b, err := s.meta.Read(ctx, keyPrefix+access, 0, 0)
	if errors.Is(err, client.ErrNotFound) {
		return "", "", s3err.InvalidAccessKeyID
	}
	if err != nil {
		return "", "", err
	}
	var r cachedKeyRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return "", "", fmt.Errorf("access key %s: %w", access, err)
	}
	s.mu.Lock()
	s.keys[access] = cachedKey{uid: r.UID, secret: r.Secret, when: now}
	s.mu.Unlock()
	return r.UID, r.Secret, nil
}

// ---- buckets ----

// Bucket is a bucket's entry point (Ceph: bucket instance info).
type Bucket struct {
	Name         string             `json:"name"`
	ID           string             `json:"id"` // prefix of every RADOS object of the bucket
	Owner        string             `json:"owner"`
	Created      time.Time          `json:"created"`
	Placement    string             `json:"placement"`               // "default-placement" or "indexless"
	Index        *IndexLayout       `json:"index,omitempty"`         // nil: indexless
	ACL          ACL                `json:"acl"`                     // nil: the owner's FULL_CONTROL (acl.go)
	Location     string             `json:"location,omitempty"`      // the LocationConstraint it was created with
	Tags         []Tag              `json:"tags,omitempty"`          // PutBucketTagging's (tagging.go)
	CORS         []CORSRule         `json:"cors,omitempty"`          // PutBucketCors's (cors.go)
	Lifecycle    []LifecycleRule    `json:"lifecycle,omitempty"`     // PutBucketLifecycleConfiguration's (lifecycle.go)
	Policy       string             `json:"policy,omitempty"`        // PutBucketPolicy's document, as put (the gateway parses it: ParsedPolicy)
	PublicAccess *PublicAccessBlock `json:"public_access,omitempty"` // PutPublicAccessBlock's (publicaccess.go)
	Ownership    string             `json:"ownership,omitempty"`     // object ownership, "" if not set (ownership.go)
	Versioning   string             `json:"versioning,omitempty"`    // "", VersioningEnabled or VersioningSuspended (versioning.go)
	// VersionedSince is when versioning was first set (SetVersioning).
	VersionedSince time.Time `json:"versioned_since,omitzero"`
	// ObjectLock is the bucket's object lock configuration (nil: none;
	// objectlock.go).
	ObjectLock *ObjectLock `json:"object_lock,omitempty"`
	// Quota is the bucket's own quota (nil: its owner's bucket quota;
	// quota.go).
	Quota *Quota `json:"quota,omitempty"`
	// Logging is the bucket's logging configuration (nil: not logged;
	// bucketlog.go).
	Logging *BucketLogging `json:"logging,omitempty"`
	// Encryption is the bucket's default encryption (nil: none; sse.go).
	Encryption *BucketEncryption `json:"encryption,omitempty"`
	// Payer is who pays for requests: "" (the bucket's owner) or
	// PayerRequester (PutBucketRequestPayment's; ownership.go).
	Payer string `json:"payer,omitempty"`

	policyOnce sync.Once
	policy     any       // Policy, parsed by ParsedPolicy's caller
	loaded     time.Time // when it was read from the meta pool (recheck)
}

// Indexless reports whether the bucket keeps no index (cannot be listed).
func (b *Bucket) Indexless() bool { return b.Index == nil }

// Placement targets a bucket can be created with (the LocationConstraint
// "ZONEGROUP:TARGET", as RGW).
const (
	PlacementDefault   = "default-placement"
	PlacementIndexless = "indexless"
)

var bucketNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// validBucketName applies S3's bucket naming rules (3-63 characters of
// lower case letters, digits, dots and hyphens; not an IP address; no
// adjacent dots).
func validBucketName(n string) bool {
	if !bucketNameRE.MatchString(n) || strings.Contains(n, "..") || strings.Contains(n, ".-") || strings.Contains(n, "-.") {
		return false
	}
	return !regexp.MustCompile(`^\d+\.\d+\.\d+\.\d+$`).MatchString(n)
}

// CreateBucket creates a bucket owned by uid, with a placement target, the
// location constraint it was asked for and an ACL (nil: the default).
// name is the bucket's key (tenant.go), in uid's own tenant
// (s3err.AccessDenied otherwise).
// s3err.BucketAlreadyOwnedByYou / s3err.BucketAlreadyExists if the name is taken.
func (s *Store) CreateBucket(ctx context.Context, name, uid, placement, location string, acl ACL, ownership string) (*Bucket, error) {
	tenant, s3name := SplitBucketKey(name)
	if !validBucketName(s3name) || (tenant != "" && !tenantRE.MatchString(tenant)) {
		return nil, s3err.InvalidBucketName.With("bucket name %q is not valid", s3name)
	}
	if tenant != UserTenant(uid) {
		return nil, s3err.AccessDenied.With("user %q may not create buckets in tenant %q", uid, tenant)
	}
	if u, err := s.GetUser(ctx, uid); err == nil && u.BucketLimit() >= 0 {
		owned, err := s.UserBuckets(ctx, uid)
		if err != nil {
			return nil, err
		}
		if len(owned) >= u.BucketLimit() && !slices.Contains(owned, name) {
			return nil, s3err.TooManyBuckets.With("user %q owns %d buckets, its limit", uid, len(owned))
		}
	}
	idb := make([]byte, 8)
	rand.Read(idb)
	b := &Bucket{Name: name, ID: hex.EncodeToString(idb), Owner: uid, Created: time.Now().UTC(), Placement: PlacementDefault, loaded: time.Now(),
		Index: newIndexLayout(s.opt.IndexShards, s.opt.RangeShards), ACL: acl, Location: location, Ownership: ownership}
	switch placement {
	case "", PlacementDefault:
	case PlacementIndexless:
		b.Placement, b.Index = PlacementIndexless, nil
	default:
		return nil, s3err.InvalidArgument.With("unknown placement target %q (default-placement or indexless)", placement)
	}
	// index shards first: a crash leaves unreferenced shards, not a
	// bucket without its index
	if !b.Indexless() {
		for _, oid := range b.Index.allShards(b.ID) {
			if err := s.index.Create(ctx, oid, false); err != nil {
				return nil, fmt.Errorf("bucket %s: index shard %s: %w", name, oid, err)
			}
		}
	}
	body, _ := json.Marshal(b)
	err := operate(ctx, s.meta, bucketObjP+name, []osdop.Op{{Code: osdop.Create, Exclusive: true}, {Code: osdop.WriteFull, Data: body}})
	if errors.Is(err, client.ErrExists) {
		s.removeShards(ctx, b)
		old, gerr := s.GetBucket(ctx, name)
		if gerr == nil && old.Owner == uid {
			return nil, s3err.BucketAlreadyOwnedByYou
		}
		return nil, s3err.BucketAlreadyExists
	}
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", name, err)
	}
	if err := s.meta.OmapSet(ctx, userPrefix+uid+userBuckets, []client.KV{{Key: name}}); err != nil {
		return nil, fmt.Errorf("bucket %s: owner's list: %w", name, err)
	}
	return b, nil
}

func (s *Store) removeShards(ctx context.Context, b *Bucket) {
	if b.Indexless() {
		return
	}
	for _, oid := range b.Index.allShards(b.ID) {
		s.index.Remove(ctx, oid)
	}
}

// GetBucket reads a bucket's entry point (s3err.NoSuchBucket).
func (s *Store) GetBucket(ctx context.Context, name string) (*Bucket, error) {
	body, err := s.meta.Read(ctx, bucketObjP+name, 0, 0)
	if errors.Is(err, client.ErrNotFound) {
		return nil, s3err.NoSuchBucket.With("bucket %q does not exist", name)
	}
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", name, err)
	}
	b := &Bucket{loaded: time.Now()}
	if err := json.Unmarshal(body, b); err != nil {
		return nil, fmt.Errorf("bucket %s: %w", name, err)
	}
	return b, nil
}

// LookupBucket is GetBucket through a cache. A cached bucket that another
// gateway deleted is caught by the index (rgw.prepare fails on a removed
// shard, and the caller drops the cache entry with ForgetBucket);
// indexless buckets are never cached.
func (s *Store) LookupBucket(ctx context.Context, name string) (*Bucket, error) {
	s.mu.Lock()
	c, ok := s.buckets[name]
	s.mu.Unlock()
	if ok && time.Since(c.when) < cacheTTL {
		return c.b, nil
	}
	b, err := s.GetBucket(ctx, name)
	if err != nil {
		return nil, err
	}
	if !b.Indexless() {
		s.mu.Lock()
		s.buckets[name] = cachedBucket{b: b, when: time.Now()}
		s.mu.Unlock()
	}
	return b, nil
}

// ForgetBucket drops bucket name from this Store's bucket cache, so the
// next LookupBucket reads its entry point again (after a change this
// gateway made; other gateways see it once their entry expires, cacheTTL).
func (s *Store) ForgetBucket(name string) {
	s.mu.Lock()
	delete(s.buckets, name)
	s.mu.Unlock()
}

// UserBuckets lists the names of uid's buckets, sorted.
func (s *Store) UserBuckets(ctx context.Context, uid string) ([]string, error) {
	return omapKeys(ctx, s.meta, userPrefix+uid+userBuckets)
}

// BucketStats are a bucket's totals from its index (indexless: zero).
type BucketStats struct {
	Objects int64 `json:"num_objects"`
	Bytes   int64 `json:"size_bytes"`
	Pending int   `json:"pending_ops"`
	Shards  int   `json:"num_shards"`
	Ranges  int   `json:"num_ranges"`
}

// Stats sums the bucket's index shards' stats.
func (s *Store) Stats(ctx context.Context, b *Bucket) (BucketStats, error) {
	var st BucketStats
	if b.Indexless() {
		return st, nil
	}
	st.Shards, st.Ranges = b.Index.TotalShards(), len(b.Index.Ranges)
	for i := range b.Index.Ranges {
		r := &b.Index.Ranges[i]
		for _, oid := range r.oids(b.ID) {
			if err := s.shardStats(ctx, oid, &st); err != nil {
				return st, fmt.Errorf("bucket %s: %w", b.Name, err)
			}
		}
	}
	return st, nil
}

func (s *Store) shardStats(ctx context.Context, oid string, st *BucketStats) error {
	// the totals and the pending records, in one request
	rep, err := s.index.Operate(ctx, oid, []osdop.Op{{Code: osdop.OmapGet, Keys: []string{clsrgw.StatsKey}},
		{Code: osdop.OmapList, Prefix: clsrgw.PendingPrefix, Max: 1000}})
	if errors.Is(err, client.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("shard %s: %w", oid, err)
	}
	for _, kv := range rep.Results[0].KVs {
		var x clsrgw.Stats
		if json.Unmarshal(kv.Value, &x) == nil {
			st.Objects += x.Objects
			st.Bytes += x.Bytes
		}
	}
	st.Pending += len(rep.Results[1].KVs)
	return nil
}

// DeleteBucket removes an empty bucket (s3err.BucketNotEmpty otherwise).
func (s *Store) DeleteBucket(ctx context.Context, b *Bucket) error {
	if b.Indexless() {
		found := false
		err := s.data.List(ctx, func(n string) bool {
			found = strings.HasPrefix(n, b.ID+"_")
			return !found
		})
		if err != nil {
			return err
		}
		if found {
			return s3err.BucketNotEmpty
		}
	} else {
		ents, _, err := s.listMerged(ctx, b, "", "", 1, b.Versioned())
		if err != nil {
			return err
		}
		if len(ents) > 0 {
			return s3err.BucketNotEmpty.With("bucket %q still holds objects or object versions", b.Name)
		}
	}
	// uploads in progress do not keep a bucket (as S3): abort them
	for {
		ups, _, err := s.ListUploads(ctx, b, "", "", "", 1000)
		if err != nil {
			return err
		}
		if len(ups) == 0 {
			break
		}
		for _, u := range ups {
			if err := s.AbortUpload(ctx, b, u.Key, u.UploadID); err != nil {
				return err
			}
		}
	}
	if b.Logging != nil { // deliver what is pending; its batch goes with the bucket
		if _, err := s.CommitLog(ctx, b, 0, true); err != nil {
			s.opt.Logger.Warn("bucket log commit failed", "bucket", b.Name, "err", err)
		}
	}
	if err := s.meta.Remove(ctx, bucketObjP+b.Name); err != nil && !errors.Is(err, client.ErrNotFound) {
		return err
	}
	s.log.Remove(ctx, logBatchOID(b))
	s.ForgetBucket(b.Name)
	s.removeShards(ctx, b)
	s.nonec.Remove(ctx, b.ID+uploadsSuffix)
	return s.meta.OmapRm(ctx, userPrefix+b.Owner+userBuckets, []string{b.Name})
}

// operate runs ops on oid and returns only the error.
func operate(ctx context.Context, p *client.Pool, oid string, ops []osdop.Op) error {
	_, err := p.Operate(ctx, oid, ops)
	return err
}

// omapEach calls fn with oid's omap entries after `after` whose keys start
// with prefix, in key order, reading 1000 at a time, until fn returns
// false or an error. A missing object has no entries.
func omapEach(ctx context.Context, p *client.Pool, oid, after, prefix string, fn func(kv client.KV) (bool, error)) error {
	for {
		kvs, more, err := p.OmapList(ctx, oid, after, prefix, 1000)
		if errors.Is(err, client.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: omap: %w", oid, err)
		}
		for _, kv := range kvs {
			if ok, err := fn(kv); !ok || err != nil {
				return err
			}
		}
		if !more || len(kvs) == 0 {
			return nil
		}
		after = kvs[len(kvs)-1].Key
	}
}

// omapKeys returns every omap key of oid, in order.
func omapKeys(ctx context.Context, p *client.Pool, oid string) ([]string, error) {
	var out []string
	err := omapEach(ctx, p, oid, "", "", func(kv client.KV) (bool, error) {
		out = append(out, kv.Key)
		return true, nil
	})
	return out, err
}

// updateJSON rewrites the JSON record oid with fn's change of it, if no one
// changed the record in between (its version is asserted), else reads it
// again and retries. client.ErrNotFound if the record does not exist; fn's
// error aborts.
func updateJSON[T any](ctx context.Context, p *client.Pool, oid string, fn func(*T) error) (*T, error) {
	for {
		rep, err := p.Operate(ctx, oid, []osdop.Op{{Code: osdop.Stat}, {Code: osdop.Read}})
		if err != nil {
			return nil, err
		}
		v := new(T)
		if err := json.Unmarshal(rep.Results[1].Data, v); err != nil {
			return nil, fmt.Errorf("%s: %w", oid, err)
		}
		if err := fn(v); err != nil {
			return nil, err
		}
		body, _ := json.Marshal(v)
		err = operate(ctx, p, oid, []osdop.Op{{Code: osdop.AssertVersion, Ver: rep.Results[0].Ver}, {Code: osdop.WriteFull, Data: body}})
		if errors.Is(err, osdop.ErrVerNewer) || errors.Is(err, osdop.ErrVerOlder) {
			continue // raced with another update
		}
		if err != nil {
			return nil, err
		}
		return v, nil
	}
}
