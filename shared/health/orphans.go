package health

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"net/url"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/outputs"
)

// ErrNotListable reports a table FileIO that cannot list files
// (io.ListableIO), so orphans cannot be looked for. Not retryable.
var ErrNotListable = errors.New("health: table IO cannot list files")

// FindOrphans lists the table location through the table's FileIO
// (io.ListableIO.WalkDir) and returns the files under it that nothing in the
// table's metadata references, with their total size. It is read-only:
// nothing is removed.
//
// Referenced are: the current metadata file and every file of the metadata
// log; statistics and partition-statistics files; Hadoop tables'
// metadata/version-hint.text; and, for every snapshot, its manifest list,
// its manifests and the data and delete files their live entries name
// (as iceberg-go's own orphan cleanup counts them). Paths are compared
// after turning file: URIs into local paths and cleaning them; object-store
// URIs are compared as written.
//
// Only files modified before olderThan count, so files that an in-flight
// writer has not committed yet are not reported. If the FileIO reports no
// modification time for a file (a zero time), its age is unknown and it is
// not reported. A zero olderThan disables the age filter.
//
// Like Iceberg's DeleteOrphanFiles it assumes the table owns its location:
// files of another table stored under it would be reported, and files
// written outside it (write.data.path elsewhere) are not looked for.
// Listing a large location is slow and, on S3, costs LIST requests; this
// is why it is an explicit opt-in.
func FindOrphans(ctx context.Context, tbl *table.Table, olderThan time.Time) ([]string, int64, error) {
	found, err := FindOrphansIn(ctx, tbl, Prefix{}, olderThan)
	if err != nil {
		return nil, 0, err
	}
	paths := make([]string, len(found))
	var bytes int64
	for i, f := range found {
		paths[i], bytes = f.Path, bytes+f.Bytes
	}
	return paths, bytes, nil
}

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

// Orphan is a file found by FindOrphansIn.
type Orphan struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
}

// FindOrphansIn is FindOrphans for one prefix of the location: it lists
// only that prefix and keeps only the references under it, so its memory
// follows the prefix's files, not the table's. Every prefix still reads
// every manifest of the table once. Orphans are sorted by path.
func FindOrphansIn(ctx context.Context, tbl *table.Table, prefix Prefix, olderThan time.Time) ([]Orphan, error) {
	if tbl == nil {
		return nil, errors.New("health: find orphans: no table")
	}
	name := strings.Join(tbl.Identifier(), ".")
	lister, err := listable(ctx, tbl)
	if err != nil {
		return nil, err
	}
	root := prefix.Path
	if root == "" {
		root = tbl.Location()
	}
	if !within(tbl.Location(), root) {
		return nil, fmt.Errorf("health: find orphans in %s: %s is not under the table's location %s", name, root, tbl.Location())
	}
	under := normalizePath(strings.TrimSuffix(root, "/"))
	refs, err := referencedFiles(ctx, tbl, lister, func(p string) bool { return strings.HasPrefix(p, under+"/") })
	if err != nil {
		return nil, fmt.Errorf("health: find orphans in %s: %w", name, err)
	}
	var orphans []Orphan
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
			if prefix.Shallow && normalizePath(strings.TrimSuffix(p, "/")) != under {
				return iofs.SkipDir
			}
			return nil
		}
		if refs[normalizePath(p)] {
			return nil
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
		orphans = append(orphans, Orphan{Path: p, Bytes: info.Size()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("health: find orphans in %s: list %s: %w", name, root, err)
	}
	sort.Slice(orphans, func(i, j int) bool { return orphans[i].Path < orphans[j].Path })
	return orphans, nil
}

// OrphanPrefixes splits the table's location into prefixes to list apart:
// the location's own files and data/'s own files (shallow), each folder of
// data/ (partitions, or object-store hash folders), and every other
// top-level folder (metadata/ among them). Listing them all finds exactly
// what listing the location finds. It lists two folder levels only.
func OrphanPrefixes(ctx context.Context, tbl *table.Table) ([]Prefix, error) {
	lister, err := listable(ctx, tbl)
	if err != nil {
		return nil, err
	}
	root := strings.TrimSuffix(tbl.Location(), "/")
	out := []Prefix{{Path: root, Shallow: true}}
	folders := func(dir string) ([]string, error) {
		var dirs []string
		self := normalizePath(dir)
		err := lister.WalkDir(dir, func(p string, d iofs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, iofs.ErrNotExist) {
					return nil
				}
				return err
			}
			if !d.IsDir() || normalizePath(strings.TrimSuffix(p, "/")) == self {
				return nil
			}
			dirs = append(dirs, strings.TrimSuffix(p, "/"))
			return iofs.SkipDir
		})
		return dirs, err
	}
	top, err := folders(root)
	if err != nil {
		return nil, fmt.Errorf("health: list the folders of %s: %w", root, err)
	}
	for _, dir := range top {
		if normalizePath(dir) != normalizePath(root+"/data") {
			out = append(out, Prefix{Path: dir})
			continue
		}
		out = append(out, Prefix{Path: dir, Shallow: true})
		sub, err := folders(dir)
		if err != nil {
			return nil, fmt.Errorf("health: list the folders of %s: %w", dir, err)
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
		return nil, fmt.Errorf("health: find orphans in %s: open table IO: %w", name, err)
	}
	lister, ok := fsys.(icebergio.ListableIO)
	if !ok {
		return nil, fmt.Errorf("%w: %s uses %T", ErrNotListable, name, fsys)
	}
	return lister, nil
}

// within says whether p is location or under it.
func within(location, p string) bool {
	loc := normalizePath(strings.TrimSuffix(location, "/"))
	n := normalizePath(strings.TrimSuffix(p, "/"))
	return n == loc || strings.HasPrefix(n, loc+"/")
}

// referencedFiles is every file the table's metadata references, by
// normalized path, that keep accepts (nil: all).
func referencedFiles(ctx context.Context, tbl *table.Table, fsys icebergio.IO, keep func(normalized string) bool) (map[string]bool, error) {
	meta := tbl.Metadata()
	refs := map[string]bool{}
	ref := func(p string) {
		if p == "" {
			return
		}
		if n := normalizePath(p); keep == nil || keep(n) {
			refs[n] = true
		}
	}
	ref(tbl.MetadataLocation())
	for e := range meta.PreviousFiles() {
		ref(e.MetadataFile)
	}
	for s := range meta.Statistics() {
		ref(s.StatisticsPath)
	}
	for s := range meta.PartitionStatistics() {
		ref(s.StatisticsPath)
	}
	ref(strings.TrimSuffix(meta.Location(), "/") + "/metadata/version-hint.text")

	seen := map[string]bool{}
	for _, s := range meta.Snapshots() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ref(s.ManifestList)
		ms, err := s.Manifests(fsys)
		if err != nil {
			return nil, fmt.Errorf("read manifest list of snapshot %d: %w", s.SnapshotID, err)
		}
		for _, m := range ms {
			if seen[m.FilePath()] {
				continue
			}
			seen[m.FilePath()] = true
			ref(m.FilePath())
			for e, err := range m.Entries(fsys, true) {
				if err != nil {
					return nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
				}
				ref(e.DataFile().FilePath())
				if r := e.DataFile().ReferencedDataFile(); r != nil {
					ref(*r)
				}
			}
		}
	}
	return refs, nil
}

// normalizePath makes a file: URI and a local path of the same file equal,
// and leaves other URIs as they are (object keys are opaque).
func normalizePath(p string) string {
	if len(p) >= 5 && strings.EqualFold(p[:5], "file:") {
		if u, err := url.Parse(p); err == nil && u.Path != "" {
			return path.Clean(u.Path)
		}
		return path.Clean(strings.TrimPrefix(p[5:], "//"))
	}
	if strings.Contains(p, "://") {
		return p
	}
	return path.Clean(filepath.ToSlash(p))
}

// StillOrphans keeps the paths no metadata of tbl references now (what
// FindOrphans found, checked again before deleting).
func StillOrphans(ctx context.Context, tbl *table.Table, paths []string) ([]string, error) {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("health: open table IO: %w", err)
	}
	wanted := make(map[string]bool, len(paths))
	for _, p := range paths {
		wanted[normalizePath(p)] = true
	}
	refs, err := referencedFiles(ctx, tbl, fsys, func(n string) bool { return wanted[n] })
	if err != nil {
		return nil, fmt.Errorf("health: %w", err)
	}
	var out []string
	for _, p := range paths {
		if !refs[normalizePath(p)] {
			out = append(out, p)
		}
	}
	return out, nil
}

// Deletable splits orphans into those an orphan cleanup may delete, under
// the location's data/ and metadata/ folders (where Iceberg writes, and
// where icekeeper's committer may delete), and the rest, which is only
// reported. An orphan named for an attempt of a job still in flight is
// neither: that job may still commit it.
func Deletable(location string, orphans, inFlightAttempts []string) (deletable, elsewhere []string) {
	root := normalizePath(strings.TrimSuffix(location, "/"))
	for _, p := range orphans {
		inFlight := false
		for _, a := range inFlightAttempts {
			inFlight = inFlight || outputs.OfAttempt(p, a)
		}
		n := normalizePath(p)
		switch {
		case inFlight:
		case strings.HasPrefix(n, root+"/data/"), strings.HasPrefix(n, root+"/metadata/"):
			deletable = append(deletable, p)
		default:
			elsewhere = append(elsewhere, p)
		}
	}
	return deletable, elsewhere
}

// SharedLocation says why tbl's location is not its own, or "": a bucket
// or filesystem root, or an orphan metadata file under it that belongs to
// another table (another table-uuid). Orphan cleanup refuses such a table:
// Iceberg's DeleteOrphanFiles assumes the table owns its location, and
// another table's files would look like orphans.
func SharedLocation(ctx context.Context, tbl *table.Table, orphans []string) (string, error) {
	loc := strings.TrimSuffix(tbl.Location(), "/")
	if i := strings.Index(loc, "://"); i >= 0 {
		rest := loc[i+3:]
		if !strings.Contains(rest, "/") || strings.HasPrefix(loc, "file://") && normalizePath(loc) == "/" {
			return fmt.Sprintf("the table's location %s is a bucket or filesystem root", tbl.Location()), nil
		}
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return "", fmt.Errorf("health: open table IO: %w", err)
	}
	own := tbl.Metadata().TableUUID().String()
	for _, p := range orphans {
		if !strings.HasSuffix(p, ".metadata.json") {
			continue
		}
		f, err := fsys.Open(p)
		if err != nil {
			return "", fmt.Errorf("health: read %s: %w", p, err)
		}
		var head struct {
			UUID string `json:"table-uuid"`
		}
		err = json.NewDecoder(f).Decode(&head)
		f.Close()
		if err == nil && head.UUID != "" && head.UUID != own {
			return fmt.Sprintf("%s belongs to another table (table-uuid %s, this table's is %s): the location is shared", p, head.UUID, own), nil
		}
	}
	return "", nil
}
