// Package orphans decides which files under a table's location an orphan
// cleanup may delete: files that nothing the table's metadata can reach
// references, and why a cleanup must not run at all. It reads the table's
// metadata, manifests and listing and deletes nothing; the committer
// deletes (shared/commit/orphans.go), fanned out by shared/listing and
// shared/deletions.
//
// Invariants:
//   - referenced, and never an orphan, is every file any metadata file
//     still in the table's log can reach: the current metadata file and
//     every logged one, their statistics and partition-statistics files,
//     the table's own version-hint.text, and for every snapshot of each of
//     them its manifest list, its manifests and the files their live
//     entries name (Referenced); a logged metadata file that cannot be
//     read stops the decision (ErrRefused);
//   - a listed file is matched against the references as Iceberg Java's
//     DeleteOrphanFiles matches it (package storagepath): by path, with
//     s3a and s3n the scheme s3; one whose path a reference has with
//     another scheme or authority is an error that refuses the whole
//     cleanup (ErrRefused wrapping storagepath.ErrMismatch), never an
//     orphan;
//   - a location whose scheme is not of the s3 family or local is refused;
//   - only files older than the safety age are orphans; only those under
//     the location's data/ and metadata/, not named for an attempt still
//     in flight, may be deleted (Deletable);
//   - the cleanup is refused (Shared) when the location may hold files of
//     another table: a bucket or filesystem root; any file under it that
//     looks like table metadata and is not this table's, whatever its age;
//     any table of the catalog whose location or write paths are inside
//     this location, or contain it; or a catalog that cannot be listed;
//   - Still checks candidates again against the table loaded anew, right
//     before they are deleted.
package orphans

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"path"
	"sort"
	"strings"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/metadatafile"
	"github.com/icekeeper/icekeeper/shared/outputs"
	"github.com/icekeeper/icekeeper/shared/storagepath"
)

// Sentinel errors.
var (
	// ErrNotListable reports a table FileIO that cannot list files
	// (io.ListableIO), so orphans cannot be looked for. Not retryable.
	ErrNotListable = errors.New("orphans: table IO cannot list files")
	// ErrRefused: the cleanup must not run (the location may hold another
	// table's files, a listed file and a referenced one differ only in
	// scheme or authority, the metadata log cannot be read). Not
	// retryable: nothing is deleted, and the reason says what to fix.
	ErrRefused = errors.New("orphan cleanup refused")
)

// Prefix is one part of a table's location to look for orphans in, so
// that a location of millions of objects is listed by many workers.
type Prefix struct {
	// Path is a folder under the table's location (a full URI, as the
	// table's FileIO lists it); empty: the whole location.
	Path string `json:"path,omitempty"`
	// Shallow: only the files directly in Path, not its subfolders (each
	// listed as a prefix of its own).
	Shallow bool `json:"shallow,omitempty"`
}

// File is an orphan Find found.
type File struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
}

// Found is what Find found under a prefix.
type Found struct {
	// Orphans: files older than the safety age that nothing references,
	// sorted by path; never a table metadata file or version hint
	// (metadataFile).
	Orphans []File
	// Metadata: files that nothing references and that look like table
	// metadata (metadata.json files, plain or compressed, version hints,
	// anything in a metadata/ folder other than the table's own), of any
	// age, sorted: Shared decides whether they are the table's own.
	Metadata []string
}

// Paths is the orphans' paths and their total size.
func Paths(found []File) ([]string, int64) {
	paths := make([]string, len(found))
	var n int64
	for i, f := range found {
		paths[i], n = f.Path, n+f.Bytes
	}
	return paths, n
}

// Find lists one prefix of the table's location (the whole location for a
// zero Prefix) through the table's FileIO (io.ListableIO.WalkDir) and
// returns the files under it that nothing references (Referenced). It
// holds only the references under the prefix, so its memory follows the
// prefix's files, not the table's; every prefix still reads every manifest
// of the table once.
//
// Orphans are only files modified before olderThan, so files that an
// in-flight writer has not committed yet are not reported; a file whose
// modification time the FileIO does not report is not either. A zero
// olderThan disables the age filter.
//
// A listed file whose path a reference has with another scheme or
// authority, or a location of a scheme other than the s3 family or local
// files, is an error wrapping ErrRefused. Listing a large location is slow
// and, on S3, costs LIST requests; this is why it is an explicit opt-in.
func Find(ctx context.Context, tbl *table.Table, prefix Prefix, olderThan time.Time) (Found, error) {
	var out Found
	if tbl == nil {
		return out, errors.New("orphans: find: no table")
	}
	name := strings.Join(tbl.Identifier(), ".")
	if err := storagepath.Supported(tbl.Location()); err != nil {
		return out, fmt.Errorf("%w: %s: %w", ErrRefused, name, err)
	}
	lister, err := listable(ctx, tbl)
	if err != nil {
		return out, err
	}
	root := prefix.Path
	if root == "" {
		root = tbl.Location()
	}
	if !storagepath.Within(tbl.Location(), root) {
		return out, fmt.Errorf("orphans: find in %s: %s is not under the table's location %s", name, root, tbl.Location())
	}
	refs, err := Referenced(ctx, tbl, lister, func(p string) bool { return storagepath.PathUnder(root, p) })
	if err != nil {
		return out, fmt.Errorf("orphans: find in %s: %w", name, err)
	}
	own := ownMetadataFolders(tbl)
	under := storagepath.Parse(root).Path
	err = lister.WalkDir(root, func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, iofs.ErrNotExist) {
				return nil // the location (or a folder) is gone: nothing there
			}
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if d.IsDir() {
			if prefix.Shallow && storagepath.Parse(p).Path != under {
				return iofs.SkipDir
			}
			return nil
		}
		has, err := refs.Has(p)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrRefused, err)
		}
		if has {
			return nil
		}
		if looksLikeMetadata(tbl.Location(), own, p) {
			out.Metadata = append(out.Metadata, p)
		}
		if metadataFile(p) {
			return nil // never an orphan, however old (metadataFile)
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, iofs.ErrNotExist) {
				return nil // removed while listing
			}
			return err
		}
		if !olderThan.IsZero() && (info.ModTime().IsZero() || !info.ModTime().Before(olderThan)) {
			return nil
		}
		out.Orphans = append(out.Orphans, File{Path: p, Bytes: info.Size()})
		return nil
	})
	if err != nil {
		return Found{}, fmt.Errorf("orphans: find in %s: list %s: %w", name, root, err)
	}
	sort.Slice(out.Orphans, func(i, j int) bool { return out.Orphans[i].Path < out.Orphans[j].Path })
	sort.Strings(out.Metadata)
	return out, nil
}

// Prefixes splits the table's location into prefixes to list apart: the
// location's own files and data/'s own files (shallow), each folder of
// data/ (partitions, or object-store hash folders), and every other
// top-level folder (metadata/ among them). Listing them all finds exactly
// what listing the location finds. It lists two folder levels only.
func Prefixes(ctx context.Context, tbl *table.Table) ([]Prefix, error) {
	if err := storagepath.Supported(tbl.Location()); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrRefused, strings.Join(tbl.Identifier(), "."), err)
	}
	lister, err := listable(ctx, tbl)
	if err != nil {
		return nil, err
	}
	root := strings.TrimSuffix(tbl.Location(), "/")
	out := []Prefix{{Path: root, Shallow: true}}
	folders := func(dir string) ([]string, error) {
		var dirs []string
		self := storagepath.Parse(dir).Path
		err := lister.WalkDir(dir, func(p string, d iofs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, iofs.ErrNotExist) {
					return nil
				}
				return err
			}
			if !d.IsDir() || storagepath.Parse(p).Path == self {
				return nil
			}
			dirs = append(dirs, strings.TrimSuffix(p, "/"))
			return iofs.SkipDir
		})
		return dirs, err
	}
	top, err := folders(root)
	if err != nil {
		return nil, fmt.Errorf("orphans: list the folders of %s: %w", root, err)
	}
	data := storagepath.Parse(root + "/data").Path
	for _, dir := range top {
		if storagepath.Parse(dir).Path != data {
			out = append(out, Prefix{Path: dir})
			continue
		}
		out = append(out, Prefix{Path: dir, Shallow: true})
		sub, err := folders(dir)
		if err != nil {
			return nil, fmt.Errorf("orphans: list the folders of %s: %w", dir, err)
		}
		for _, s := range sub {
			out = append(out, Prefix{Path: s})
		}
	}
	return out, nil
}

// listable opens the table's FileIO for listing, or says why it cannot.
func listable(ctx context.Context, tbl *table.Table) (icebergio.ListableIO, error) {
	name := strings.Join(tbl.Identifier(), ".")
	if outputs.InTableBucket(tbl.Location()) {
		return nil, fmt.Errorf("%w: %s is in an S3 table bucket, which cannot be listed (its unreferenced file removal deletes orphans)", ErrNotListable, name)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("orphans: find in %s: open table IO: %w", name, err)
	}
	lister, ok := fsys.(icebergio.ListableIO)
	if !ok {
		return nil, fmt.Errorf("%w: %s uses %T", ErrNotListable, name, fsys)
	}
	return lister, nil
}

// Referenced is every file the table's metadata can reach that keep
// accepts (nil: all), by location: the current metadata file and every
// file of its metadata log, their statistics and partition-statistics
// files, the table's version-hint.text, and for every snapshot of each of
// them its manifest list, its manifests and the data and delete files
// their live entries name. Each logged metadata file is read (plain, gzip
// or zstd); one that cannot be read is an error wrapping ErrRefused, one
// that is gone an error wrapping fs.ErrNotExist (a writer that deletes old
// metadata files moved the table on: load it again).
//
// A snapshot a logged metadata file names that the current metadata no
// longer has was expired, by icekeeper or by another engine (Spark's
// expire_snapshots, Iceberg Java's ExpireSnapshots), and the expiry
// deletes its manifest list and the manifests only it used: a manifest
// list or manifest of such a snapshot that is gone is passed over, since
// the files it named that a kept snapshot still needs are reached through
// that snapshot. The current metadata's snapshots are never passed over:
// a manifest list or manifest of theirs that is gone is an error.
func Referenced(ctx context.Context, tbl *table.Table, fsys icebergio.IO, keep func(location string) bool) (*storagepath.Set, error) {
	refs := storagepath.NewSet()
	ref := func(p string) {
		if p != "" && (keep == nil || keep(p)) {
			refs.Add(p)
		}
	}
	ref(tbl.MetadataLocation())
	for _, dir := range ownMetadataFolders(tbl) {
		ref(dir + "/version-hint.text")
	}
	seenLists, seenManifests := map[string]bool{}, map[string]bool{}
	current := map[int64]bool{}
	for _, s := range tbl.Metadata().Snapshots() {
		current[s.SnapshotID] = true
	}
	// expiredAndGone: a file of a snapshot expired since, deleted by the
	// expiry.
	expiredAndGone := func(s table.Snapshot, err error) bool {
		return !current[s.SnapshotID] && errors.Is(err, iofs.ErrNotExist)
	}
	add := func(meta table.Metadata) error {
		for s := range meta.Statistics() {
			ref(s.StatisticsPath)
		}
		for s := range meta.PartitionStatistics() {
			ref(s.StatisticsPath)
		}
		for _, s := range meta.Snapshots() {
			if err := ctx.Err(); err != nil {
				return err
			}
			if s.ManifestList != "" && seenLists[s.ManifestList] {
				continue
			}
			seenLists[s.ManifestList] = true
			ref(s.ManifestList)
			ms, err := s.Manifests(fsys)
			if expiredAndGone(s, err) {
				continue
			}
			if err != nil {
				return fmt.Errorf("read manifest list of snapshot %d: %w", s.SnapshotID, err)
			}
			for _, m := range ms {
				if seenManifests[m.FilePath()] {
					continue
				}
				seenManifests[m.FilePath()] = true
				ref(m.FilePath())
				for e, err := range m.Entries(fsys, true) {
					if expiredAndGone(s, err) {
						break
					}
					if err != nil {
						return fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
					}
					ref(e.DataFile().FilePath())
					if r := e.DataFile().ReferencedDataFile(); r != nil {
						ref(*r)
					}
				}
			}
		}
		return nil
	}
	meta := tbl.Metadata()
	if err := add(meta); err != nil {
		return nil, err
	}
	for e := range meta.PreviousFiles() {
		ref(e.MetadataFile)
		prev, err := metadatafile.Read(fsys, e.MetadataFile)
		if errors.Is(err, iofs.ErrNotExist) {
			// Gone since the table was loaded: load it again (Still).
			return nil, fmt.Errorf("read %s of the metadata log: %w", e.MetadataFile, err)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: read %s of the metadata log: %w", ErrRefused, e.MetadataFile, err)
		}
		if err := add(prev); err != nil {
			return nil, fmt.Errorf("snapshots of %s of the metadata log: %w", e.MetadataFile, err)
		}
	}
	return refs, nil
}

// Still loads the table (load: from its catalog, right before deleting)
// and keeps the paths nothing it references (Referenced). When a file of
// the metadata log is gone meanwhile, it loads the table again, a few
// times, then refuses (ErrRefused). A path a reference has with another
// scheme or authority is an error wrapping ErrRefused.
func Still(ctx context.Context, load func(context.Context) (*table.Table, error), paths []string) ([]string, error) {
	wanted := make(map[string]bool, len(paths))
	for _, p := range paths {
		wanted[storagepath.Parse(p).Path] = true
	}
	keep := func(p string) bool { return wanted[storagepath.Parse(p).Path] }
	const loads = 3
	for i := 1; ; i++ {
		tbl, err := load(ctx)
		if err != nil {
			return nil, fmt.Errorf("orphans: load the table before deleting: %w", err)
		}
		fsys, err := tbl.FS(ctx)
		if err != nil {
			return nil, fmt.Errorf("orphans: open table IO: %w", err)
		}
		refs, err := Referenced(ctx, tbl, fsys, keep)
		if errors.Is(err, iofs.ErrNotExist) {
			if i < loads {
				continue
			}
			err = fmt.Errorf("%w: the metadata log keeps naming files that are gone: %w", ErrRefused, err)
		}
		if err != nil {
			return nil, fmt.Errorf("orphans: %s: %w", strings.Join(tbl.Identifier(), "."), err)
		}
		var out []string
		for _, p := range paths {
			has, err := refs.Has(p)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrRefused, err)
			}
			if !has {
				out = append(out, p)
			}
		}
		return out, nil
	}
}

// Deletable splits orphans into those an orphan cleanup may delete, under
// the location's data/ and metadata/ folders (where Iceberg writes, and
// where icekeeper's committer may delete), and the rest, which is only
// reported. An orphan named for an attempt of a job still in flight is
// neither: that job may still commit it.
func Deletable(location string, orphans, inFlightAttempts []string) (deletable, elsewhere []string) {
	root := strings.TrimSuffix(location, "/")
	for _, p := range orphans {
		inFlight := false
		for _, a := range inFlightAttempts {
			inFlight = inFlight || outputs.OfAttempt(p, a)
		}
		switch {
		case inFlight:
		case storagepath.Within(root+"/data", p) && storagepath.Parse(p).Path != storagepath.Parse(root+"/data").Path,
			storagepath.Within(root+"/metadata", p) && storagepath.Parse(p).Path != storagepath.Parse(root+"/metadata").Path:
			deletable = append(deletable, p)
		default:
			elsewhere = append(elsewhere, p)
		}
	}
	return deletable, elsewhere
}

// ownMetadataFolders are the folders the table's own metadata is written
// to: metadata/ under its location, and write.metadata.path when set.
func ownMetadataFolders(tbl *table.Table) []string {
	out := []string{strings.TrimSuffix(tbl.Location(), "/") + "/metadata"}
	if p := tbl.Properties()[table.WriteMetadataPathKey]; p != "" {
		out = append(out, strings.TrimSuffix(p, "/"))
	}
	return out
}

// metadataFileSuffixes name table metadata files, plain or compressed as
// Iceberg and iceberg-go name them, and version hints.
var metadataFileSuffixes = []string{".metadata.json", ".metadata.json.gz", ".metadata.json.zstd", "version-hint.text"}

// metadataFile says whether p is a table metadata file or a version hint.
// Orphan cleanup keeps those, however old and unreferenced: they are
// small, any of them may be what a catalog or another tool points at
// (IAM cannot tell the table's current one from an old one), and the
// stack denies every function their deletion (infra/iam.go,
// metadataFilesKept), which a cleanup trying would run into.
func metadataFile(p string) bool {
	base := path.Base(storagepath.Parse(p).Path)
	for _, suffix := range metadataFileSuffixes {
		if strings.HasSuffix(base, suffix) {
			return true
		}
	}
	return false
}

// looksLikeMetadata says whether p (under location) may be table
// metadata: a metadata.json file, plain or compressed as Iceberg and
// iceberg-go name them, a version-hint.text, or any file in a folder
// named metadata other than the table's own metadata folders.
func looksLikeMetadata(location string, own []string, p string) bool {
	if metadataFile(p) {
		return true
	}
	loc := storagepath.Parse(location).Path
	for dir := path.Dir(storagepath.Parse(p).Path); dir != loc && strings.HasPrefix(dir, loc+"/"); dir = path.Dir(dir) {
		if path.Base(dir) != "metadata" {
			continue
		}
		mine := false
		for _, o := range own {
			mine = mine || storagepath.Parse(o).Path == dir
		}
		if !mine {
			return true
		}
	}
	return false
}

// tableUUID reads the table-uuid of a metadata file, plain, gzip or zstd.
func tableUUID(fsys icebergio.IO, location string) (string, error) {
	b, err := metadatafile.Bytes(fsys, location)
	if err != nil {
		return "", err
	}
	var head struct {
		UUID string `json:"table-uuid"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return "", fmt.Errorf("not table metadata: %w", err)
	}
	if head.UUID == "" {
		return "", errors.New("not table metadata: no table-uuid")
	}
	return head.UUID, nil
}
