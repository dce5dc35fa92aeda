// Package expire decides which snapshots of a table to expire and which
// files that frees. It reads metadata only and changes nothing: the caller
// commits the removal (Updates) and then deletes the files (Unreferenced).
//
// Retention follows the table's own Iceberg properties and each ref's own
// settings exactly as iceberg-go's Transaction.ExpireSnapshots does
// (table/transaction.go, v0.7.0), with one more rule:
//
//   - a branch keeps its newest min-snapshots-to-keep snapshots, and every
//     snapshot younger than max-snapshot-age, walking back from its head;
//     a tag keeps the snapshot it names; a ref other than main older than
//     max-ref-age is removed instead and keeps nothing;
//   - a snapshot that is no ref's ancestor is kept while younger than
//     max-snapshot-age;
//   - icekeeper's rule: a snapshot a job in flight pinned is kept, and so is
//     every snapshot from it to the head of the branch it is on, which that
//     job's committer validates.
//
// Files freed (Unreferenced) are computed as iceberg-go's post-commit
// clean-up of an expiry does (table/updates.go, removeSnapshotsUpdate
// .PostCommit): the manifest lists and statistics files of the expired
// snapshots, the manifests only they use, and every file those manifests
// name, less every file a kept snapshot's manifests name as live (ADDED or
// EXISTING) and every statistics file still listed. They are listed before
// the commit, so that a durable record of them can precede it; once the
// commit landed, StillUnreferenced drops whatever snapshots committed
// meanwhile reference, and the rest may be deleted.
package expire

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/metadatafile"
	"github.com/icekeeper/icekeeper/shared/storagepath"
)

// Table properties. The icekeeper.expire.* ones override Iceberg's for
// icekeeper only (other engines keep reading Iceberg's).
const (
	MinSnapshotsToKeepKey = table.MinSnapshotsToKeepKey // history.expire.min-snapshots-to-keep
	MaxSnapshotAgeMsKey   = table.MaxSnapshotAgeMsKey   // history.expire.max-snapshot-age-ms
	MaxRefAgeMsKey        = table.MaxRefAgeMsKey        // history.expire.max-ref-age-ms

	OverrideMinSnapshotsToKeepKey = "icekeeper.expire.min-snapshots-to-keep"
	OverrideMaxSnapshotAgeMsKey   = "icekeeper.expire.max-snapshot-age-ms"
	OverrideMaxRefAgeMsKey        = "icekeeper.expire.max-ref-age-ms"

	// Older spellings iceberg-go still honours when the keys above are unset.
	legacyMinSnapshotsToKeepKey = "min-snapshots-to-keep"
	legacyMaxSnapshotAgeMsKey   = "max-snapshot-age-ms"
	legacyMaxRefAgeMsKey        = "max-ref-age-ms"
)

// ErrRetention reports a retention property that cannot be used; the
// property must be fixed, retrying cannot help.
var ErrRetention = errors.New("expire: invalid retention property")

// ErrGCDisabled: the table's gc.enabled is false, so its files may be
// shared with other tables and nothing is expired (as iceberg-go refuses).
var ErrGCDisabled = errors.New("expire: gc.enabled is false: the table's files may be shared, snapshots are not expired")

// ErrUndone: a snapshot the expiry removed is in the table again (another
// tool pointed the catalog back at an older metadata file, or registered
// the table from one): the files the expiry freed are needed again, and
// nothing more of its deletions may go. Terminal for the expiry's
// deletions, never retried.
var ErrUndone = errors.New("expire: the expiry was undone: a snapshot it removed is in the table again")

// Retention is a table's snapshot retention.
type Retention struct {
	// MinSnapshotsToKeep newest snapshots of each branch are kept whatever
	// their age.
	MinSnapshotsToKeep int
	// MaxSnapshotAge: older snapshots beyond MinSnapshotsToKeep expire.
	MaxSnapshotAge time.Duration
	// MaxRefAge: a branch or tag other than main whose snapshot is older is
	// removed. Never, by default.
	MaxRefAge time.Duration
}

// forever is the largest age a Duration holds (the spec's default
// max-ref-age is Long.MAX_VALUE milliseconds).
const forever = time.Duration(math.MaxInt64)

// RetentionFor reads a table's retention from its properties: icekeeper's
// override, else Iceberg's key, else its legacy spelling, else Iceberg's
// default (1 snapshot, 5 days, never). A malformed value is an error
// wrapping ErrRetention that names the property.
func RetentionFor(props map[string]string) (Retention, error) {
	r := Retention{
		MinSnapshotsToKeep: table.MinSnapshotsToKeepDefault,
		MaxSnapshotAge:     time.Duration(table.MaxSnapshotAgeMsDefault) * time.Millisecond,
		MaxRefAge:          forever,
	}
	if n, ok, err := positive(props, math.MaxInt32, OverrideMinSnapshotsToKeepKey, MinSnapshotsToKeepKey, legacyMinSnapshotsToKeepKey); err != nil {
		return r, err
	} else if ok {
		r.MinSnapshotsToKeep = int(n)
	}
	maxMs := int64(forever / time.Millisecond)
	if n, ok, err := positive(props, maxMs, OverrideMaxSnapshotAgeMsKey, MaxSnapshotAgeMsKey, legacyMaxSnapshotAgeMsKey); err != nil {
		return r, err
	} else if ok {
		r.MaxSnapshotAge = time.Duration(n) * time.Millisecond
	}
	if n, ok, err := positive(props, math.MaxInt64, OverrideMaxRefAgeMsKey, MaxRefAgeMsKey, legacyMaxRefAgeMsKey); err != nil {
		return r, err
	} else if ok {
		r.MaxRefAge = DurationMs(n)
	}
	return r, nil
}

// positive reads the first of keys that is set as an integer in [1, limit].
func positive(props map[string]string, limit int64, keys ...string) (int64, bool, error) {
	for _, k := range keys {
		v := strings.TrimSpace(props[k])
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n > limit {
			return 0, false, fmt.Errorf("%w: table property %s=%q: want a positive integer up to %d", ErrRetention, k, v, limit)
		}
		return n, true, nil
	}
	return 0, false, nil
}

// DurationMs is n milliseconds, or forever (the largest Duration) when
// that overflows.
func DurationMs(n int64) time.Duration {
	if n >= int64(forever/time.Millisecond) {
		return forever
	}
	return time.Duration(n) * time.Millisecond
}

// GCEnabled reads gc.enabled (default true).
func GCEnabled(props map[string]string) (bool, error) {
	v := strings.TrimSpace(props[table.GCEnabledKey])
	if v == "" {
		return table.GCEnabledDefault, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%w: table property %s=%q: want true or false", ErrRetention, table.GCEnabledKey, v)
	}
	return b, nil
}

// Selection is what Select decided.
type Selection struct {
	// Expired and Kept split the snapshots, each in metadata order.
	Expired, Kept []table.Snapshot
	// RemovedRefs are the refs older than their max-ref-age, sorted.
	RemovedRefs []string
}

// ExpiredIDs lists the expired snapshots' ids.
func (s Selection) ExpiredIDs() []int64 {
	ids := make([]int64, len(s.Expired))
	for i, snap := range s.Expired {
		ids[i] = snap.SnapshotID
	}
	return ids
}

// Empty reports whether nothing would change.
func (s Selection) Empty() bool { return len(s.Expired) == 0 && len(s.RemovedRefs) == 0 }

// Select splits the snapshots of meta into expired and kept at now (see
// the package comment). pinned are snapshots jobs in flight pinned.
func Select(meta table.Metadata, now time.Time, r Retention, pinned ...int64) Selection {
	return selectRemoving(meta, now, r, func(string) bool { return true }, pinned)
}

// SelectRemoving is Select where only the refs named in removable may be
// removed: a ref past its max-ref-age that is not among them stays a ref,
// and keeps what its retention keeps (a branch its newest
// min-snapshots-to-keep and those younger than max-snapshot-age), as any
// ref does. The committer selects so with the refs its plan removes: a
// ref that passed its max-ref-age, or appeared, since the plan was made is
// not removed, so nothing it keeps may be expired either.
func SelectRemoving(meta table.Metadata, now time.Time, r Retention, removable []string, pinned ...int64) Selection {
	return selectRemoving(meta, now, r, func(name string) bool { return slices.Contains(removable, name) }, pinned)
}

func selectRemoving(meta table.Metadata, now time.Time, r Retention, removable func(name string) bool, pinned []int64) Selection {
	nowMs := now.UnixMilli()
	olderThan := func(s table.Snapshot, age time.Duration) bool {
		return age != forever && nowMs-s.TimestampMs > age.Milliseconds()
	}
	lookup := meta.SnapshotByID
	keep := map[int64]bool{}
	ancestry := map[int64]bool{}
	var sel Selection
	for name, ref := range meta.Refs() {
		head := meta.SnapshotByID(ref.SnapshotID)
		if head == nil {
			continue
		}
		maxRefAge := r.MaxRefAge
		if ref.MaxRefAgeMs != nil {
			maxRefAge = DurationMs(*ref.MaxRefAgeMs)
		}
		if name != table.MainBranch && olderThan(*head, maxRefAge) && removable(name) {
			sel.RemovedRefs = append(sel.RemovedRefs, name)
			continue
		}
		keep[ref.SnapshotID] = true
		if ref.SnapshotRefType != table.BranchRef {
			ancestry[ref.SnapshotID] = true
			continue
		}
		minKeep, maxAge := r.MinSnapshotsToKeep, r.MaxSnapshotAge
		if ref.MinSnapshotsToKeep != nil {
			minKeep = *ref.MinSnapshotsToKeep
		}
		if ref.MaxSnapshotAgeMs != nil {
			maxAge = DurationMs(*ref.MaxSnapshotAgeMs)
		}
		line := table.AncestorsOf(ref.SnapshotID, lookup)
		retaining := true
		for i, s := range line {
			ancestry[s.SnapshotID] = true
			if retaining && olderThan(s, maxAge) && i >= minKeep {
				retaining = false
			}
			if retaining {
				keep[s.SnapshotID] = true
			}
		}
		// icekeeper's rule: from the newest pin on this branch to its head.
		for i, s := range line {
			if slices.Contains(pinned, s.SnapshotID) {
				for _, t := range line[:i+1] {
					keep[t.SnapshotID] = true
				}
			}
		}
	}
	for _, id := range pinned {
		keep[id] = true
	}
	for _, s := range meta.Snapshots() {
		if !ancestry[s.SnapshotID] && !olderThan(s, r.MaxSnapshotAge) {
			keep[s.SnapshotID] = true
		}
	}
	for _, s := range meta.Snapshots() {
		if keep[s.SnapshotID] {
			sel.Kept = append(sel.Kept, s)
		} else {
			sel.Expired = append(sel.Expired, s)
		}
	}
	slices.Sort(sel.RemovedRefs)
	return sel
}

// NextDue is the earliest moment after now at which Select, on the same
// metadata and pins, selects more than it does at now: a snapshot passes
// its max-snapshot-age beyond what its branch keeps, or a ref passes its
// max-ref-age. ok is false when nothing more ever comes due (every
// snapshot a ref keeps whatever its age, or a retention of forever).
//
// On the same metadata a selection only grows with time (an age passed
// stays passed), so NextDue is a binary search over the moments a
// snapshot passes one of the ages in force, each moment one Select.
func NextDue(meta table.Metadata, now time.Time, r Retention, pinned ...int64) (time.Time, bool) {
	ages := []time.Duration{r.MaxSnapshotAge, r.MaxRefAge}
	for _, ref := range meta.Refs() {
		if ref.MaxSnapshotAgeMs != nil {
			ages = append(ages, DurationMs(*ref.MaxSnapshotAgeMs))
		}
		if ref.MaxRefAgeMs != nil {
			ages = append(ages, DurationMs(*ref.MaxRefAgeMs))
		}
	}
	nowMs := now.UnixMilli()
	var moments []int64
	for _, s := range meta.Snapshots() {
		for _, age := range ages {
			ms := age.Milliseconds()
			if age == forever || age < 0 || s.TimestampMs > math.MaxInt64-ms-1 {
				continue
			}
			if m := s.TimestampMs + ms + 1; m > nowMs { // olderThan is strict
				moments = append(moments, m)
			}
		}
	}
	slices.Sort(moments)
	moments = slices.Compact(moments)
	count := func(ms int64) int {
		sel := Select(meta, time.UnixMilli(ms), r, pinned...)
		return len(sel.Expired) + len(sel.RemovedRefs)
	}
	base := count(nowMs)
	i, _ := slices.BinarySearchFunc(moments, base, func(m int64, base int) int {
		if count(m) > base {
			return 1
		}
		return -1
	})
	if i == len(moments) {
		return time.Time{}, false
	}
	return time.UnixMilli(moments[i]), true
}

// File is a file an expiry frees.
type File struct {
	Path string `json:"path"`
	// Kind is manifest-list, manifest, data, delete or statistics.
	Kind string `json:"kind"`
	// Bytes is the file's size when the metadata says it (0 for manifest
	// lists).
	Bytes int64 `json:"bytes"`
}

// File kinds.
const (
	KindManifestList = "manifest-list"
	KindManifest     = "manifest"
	KindData         = "data"
	KindDelete       = "delete"
	KindStatistics   = "statistics"
)

// Unreferenced lists the files that committing sel, made on pre, frees:
// files of the expired snapshots that no kept snapshot references, sorted
// by path. It reads manifests only.
func Unreferenced(ctx context.Context, fsys icebergio.IO, pre table.Metadata, sel Selection) ([]File, error) {
	files := map[string]File{}
	add := func(f File) {
		if f.Path != "" {
			files[storagepath.Key(f.Path)] = f
		}
	}
	gone := map[int64]bool{}
	for _, snap := range sel.Expired {
		gone[snap.SnapshotID] = true
		add(File{Path: snap.ManifestList, Kind: KindManifestList})
	}
	for sf := range pre.Statistics() {
		if gone[sf.SnapshotID] {
			add(File{Path: sf.StatisticsPath, Kind: KindStatistics, Bytes: sf.FileSizeInBytes})
		}
	}
	for psf := range pre.PartitionStatistics() {
		if gone[psf.SnapshotID] {
			add(File{Path: psf.StatisticsPath, Kind: KindStatistics, Bytes: psf.FileSizeInBytes})
		}
	}
	kept, err := manifestsOf(ctx, fsys, sel.Kept)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, snap := range sel.Expired {
		ms, err := snap.Manifests(fsys)
		if err != nil {
			return nil, fmt.Errorf("expire: read manifest list of expired snapshot %d: %w", snap.SnapshotID, err)
		}
		for _, m := range ms {
			if _, ok := kept[storagepath.Key(m.FilePath())]; ok || seen[storagepath.Key(m.FilePath())] {
				continue
			}
			seen[storagepath.Key(m.FilePath())] = true
			add(File{Path: m.FilePath(), Kind: KindManifest, Bytes: m.Length()})
			for e, err := range m.Entries(fsys, false) {
				if err != nil {
					return nil, fmt.Errorf("expire: read manifest %s: %w", m.FilePath(), err)
				}
				df := e.DataFile()
				kind := KindData
				if df.ContentType() != iceberg.EntryContentData {
					kind = KindDelete
				}
				add(File{Path: df.FilePath(), Kind: kind, Bytes: df.FileSizeBytes()})
			}
		}
	}
	if len(files) > 0 {
		if err := dropLive(ctx, fsys, kept, files); err != nil {
			return nil, err
		}
		for _, s := range sel.Kept {
			delete(files, storagepath.Key(s.ManifestList))
		}
		for sf := range pre.Statistics() {
			if !gone[sf.SnapshotID] {
				delete(files, storagepath.Key(sf.StatisticsPath))
			}
		}
		for psf := range pre.PartitionStatistics() {
			if !gone[psf.SnapshotID] {
				delete(files, storagepath.Key(psf.StatisticsPath))
			}
		}
	}
	out := make([]File, 0, len(files))
	for _, f := range files {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// StillUnreferenced returns the files nothing the table keeps references:
// no snapshot of cur and no snapshot of any metadata file still in cur's
// metadata log (another tool may roll the table back to one of them, and
// a reader may time-travel through it), apart from the snapshots in known
// (listed as not referencing these files) and in expired (the ones the
// expiry removed); and no statistics file listed there for a snapshot not
// in expired. It is what may still be deleted once the expiry is
// committed, whatever was committed meanwhile. A metadata file of the log
// that no longer exists cannot be read by anyone and is passed over; one
// that cannot be read is an error. A snapshot of expired that cur has
// again is ErrUndone, and nothing may be deleted.
func StillUnreferenced(ctx context.Context, fsys icebergio.IO, cur table.Metadata, known, expired []int64, files []File) ([]File, error) {
	for _, id := range expired {
		if cur.SnapshotByID(id) != nil {
			return nil, fmt.Errorf("%w: snapshot %d", ErrUndone, id)
		}
	}
	set := byKey(files)
	skip := map[int64]bool{}
	for _, id := range known {
		skip[id] = true
	}
	gone := map[int64]bool{}
	for _, id := range expired {
		skip[id], gone[id] = true, true
	}
	check := func(m table.Metadata, logged bool) error {
		var fresh []table.Snapshot
		for _, s := range m.Snapshots() {
			if !skip[s.SnapshotID] {
				fresh = append(fresh, s)
				skip[s.SnapshotID] = true
			}
		}
		if logged {
			for _, s := range fresh {
				// A snapshot only the log still has, whose files an
				// earlier expiry deleted (its manifest list first), can
				// be read by nobody: nothing it names is needed on its
				// account.
				if err := dropReferenced(ctx, fsys, m, []table.Snapshot{s}, set); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
			}
		} else if err := dropReferenced(ctx, fsys, m, fresh, set); err != nil {
			return err
		}
		for sf := range m.Statistics() {
			if !gone[sf.SnapshotID] {
				delete(set, storagepath.Key(sf.StatisticsPath))
			}
		}
		for psf := range m.PartitionStatistics() {
			if !gone[psf.SnapshotID] {
				delete(set, storagepath.Key(psf.StatisticsPath))
			}
		}
		return nil
	}
	if err := check(cur, false); err != nil {
		return nil, err
	}
	for e := range cur.PreviousFiles() {
		if len(set) == 0 {
			break
		}
		m, err := metadatafile.Read(fsys, e.MetadataFile)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("expire: read metadata file %s of the table's log: %w", e.MetadataFile, err)
		}
		if err := check(m, true); err != nil {
			return nil, err
		}
	}
	return inSet(files, set), nil
}

// manifestsOf reads the manifests of snaps, by storagepath.Key of their
// path (every set of files here is keyed so: one object spelled s3:// in
// one manifest and s3a:// in another is one file).
func manifestsOf(ctx context.Context, fsys icebergio.IO, snaps []table.Snapshot) (map[string]iceberg.ManifestFile, error) {
	out := map[string]iceberg.ManifestFile{}
	for _, s := range snaps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ms, err := s.Manifests(fsys)
		if err != nil {
			return nil, fmt.Errorf("expire: read manifest list of snapshot %d: %w", s.SnapshotID, err)
		}
		for _, m := range ms {
			out[storagepath.Key(m.FilePath())] = m
		}
	}
	return out, nil
}

// dropLive removes from files every file the manifests name as live
// (ADDED or EXISTING).
func dropLive(ctx context.Context, fsys icebergio.IO, manifests map[string]iceberg.ManifestFile, files map[string]File) error {
	for _, m := range manifests {
		if err := ctx.Err(); err != nil {
			return err
		}
		for e, err := range m.Entries(fsys, false) {
			if err != nil {
				return fmt.Errorf("expire: read manifest %s: %w", m.FilePath(), err)
			}
			if e.Status() != iceberg.EntryStatusDELETED {
				delete(files, storagepath.Key(e.DataFile().FilePath()))
			}
		}
	}
	return nil
}
