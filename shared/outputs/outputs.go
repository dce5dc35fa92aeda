// Package outputs finds and removes the data files a job's rewriter attempts
// wrote, through the table's own iceberg-go FileIO.
//
// Every attempt writes its files with its attempt id (a UUID) in every file
// name (iceberg-go's write UUID), under the table's data location. So the
// files of an attempt that crashed before it could say what it wrote can
// still be found by listing the data location for names holding the id.
//
// An attempt may write in several runs (one iceberg-go write each, see
// RunID): run k's write UUID is the attempt id with its last four hex digits
// replaced by k. Files are therefore matched by the attempt's stem, its
// first 32 characters, which every run shares and which carries 108 random
// bits.
//
// Removal is idempotent: a file that is already gone is not an error.
//
// A table in an S3 table bucket (S3 Tables) is the exception: its storage
// accepts no DeleteObject and no listing (Amazon S3 API Reference,
// "Supported Amazon S3 object-level API operations for S3 Tables"), and the
// bucket's unreferenced file removal deletes every object no snapshot
// references (Amazon S3 User Guide, "Maintenance for table buckets": marked
// noncurrent after unreferencedDays, 3 by default and at least 1, deleted
// nonCurrentDays later). Files no commit took are exactly such objects, so
// for these tables nothing here lists or deletes: the files are left to the
// bucket, which is safe because a job lives hours, never a day.
package outputs

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// stemLen is the length of an attempt id's stem: "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxx".
const stemLen = 32

// MaxRuns is how many runs one attempt may write.
const MaxRuns = 1 << 16

// NewAttemptID returns a fresh attempt id: a random UUID whose last four hex
// digits are zero, so that RunID(id, 0) is the id itself.
func NewAttemptID() string {
	return uuid.NewString()[:stemLen] + "0000"
}

// AttemptStem is the part of an attempt id that every file of every run of
// the attempt carries in its name.
func AttemptStem(attempt string) string {
	if len(attempt) < stemLen {
		return attempt
	}
	return attempt[:stemLen]
}

// RunID is the write UUID of run k of an attempt.
func RunID(attempt string, k int) (uuid.UUID, error) {
	if k < 0 || k >= MaxRuns {
		return uuid.UUID{}, fmt.Errorf("outputs: run %d of attempt %s is out of range", k, attempt)
	}
	id, err := uuid.Parse(AttemptStem(attempt) + fmt.Sprintf("%04x", k))
	if err != nil {
		return uuid.UUID{}, fmt.Errorf("outputs: attempt id %q is not a UUID: %w", attempt, err)
	}
	return id, nil
}

// OfAttempt reports whether the file at path was written by the attempt.
func OfAttempt(path, attempt string) bool {
	if attempt == "" {
		return false
	}
	return strings.Contains(path[strings.LastIndex(path, "/")+1:], AttemptStem(attempt))
}

// DataRoots returns where the table's writers put data files: the table
// location's data/ folder (iceberg-go's partitioned writers always write
// there) and write.data.path when it is set elsewhere.
func DataRoots(tbl *table.Table) []string {
	roots := []string{strings.TrimSuffix(tbl.Location(), "/") + "/data"}
	if p := strings.TrimSuffix(tbl.Properties()[table.WriteDataPathKey], "/"); p != "" && p != roots[0] {
		roots = append(roots, p)
	}
	return roots
}

// InTableBucket reports whether location is a table's location in an S3
// table bucket: S3 names it s3://<id>--table-s3 (Amazon S3 User Guide,
// "Tables in S3 table buckets").
func InTableBucket(location string) bool {
	rest, ok := strings.CutPrefix(location, "s3://")
	if !ok {
		return false
	}
	bucket, _, _ := strings.Cut(rest, "/")
	return strings.HasSuffix(bucket, "--table-s3")
}

// leftToTableBucket logs that n files stay for the table bucket's
// unreferenced file removal; it reports whether the table is in one.
func leftToTableBucket(ctx context.Context, tbl *table.Table, n int) bool {
	if !InTableBucket(tbl.Location()) {
		return false
	}
	if n != 0 {
		slog.InfoContext(ctx, "files left to the table bucket's unreferenced file removal",
			"location", tbl.Location(), "files", n)
	}
	return true
}

// Remove deletes the files at paths. Missing files are skipped. In an S3
// table bucket it deletes nothing (see the package comment).
func Remove(ctx context.Context, tbl *table.Table, paths []string) error {
	if len(paths) == 0 || leftToTableBucket(ctx, tbl, len(paths)) {
		return nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return fmt.Errorf("outputs: open table IO: %w", err)
	}
	if bulk, ok := fs.(icebergio.BulkRemovableIO); ok {
		if _, err := bulk.DeleteFiles(ctx, paths); err != nil {
			return fmt.Errorf("outputs: remove %d files: %w", len(paths), err)
		}
		return nil
	}
	var errs []error
	for _, p := range paths {
		if err := fs.Remove(p); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("outputs: remove files: %w", errors.Join(errs...))
	}
	return nil
}

// FindAttemptFiles lists the files under the table's data location whose
// names contain any of the attempt ids. An S3 table bucket cannot be
// listed: there it finds nothing (see the package comment).
func FindAttemptFiles(ctx context.Context, tbl *table.Table, attempts []string) ([]string, error) {
	if len(attempts) == 0 || leftToTableBucket(ctx, tbl, 0) {
		return nil, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("outputs: open table IO: %w", err)
	}
	lister, ok := fs.(icebergio.ListableIO)
	if !ok {
		return nil, fmt.Errorf("outputs: table IO %T cannot list files", fs)
	}
	var found []string
	seen := map[string]bool{}
	for _, root := range DataRoots(tbl) {
		err = lister.WalkDir(root, func(path string, d iofs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, iofs.ErrNotExist) {
					return nil
				}
				return err
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if d.IsDir() {
				return nil
			}
			for _, a := range attempts {
				if OfAttempt(path, a) && !seen[path] {
					seen[path] = true
					found = append(found, path)
					break
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("outputs: list %s: %w", root, err)
		}
	}
	return found, nil
}

// RemoveAttempts finds and removes every file the attempts wrote.
func RemoveAttempts(ctx context.Context, tbl *table.Table, attempts []string) (int, error) {
	paths, err := FindAttemptFiles(ctx, tbl, attempts)
	if err != nil {
		return 0, err
	}
	if err := Remove(ctx, tbl, paths); err != nil {
		return 0, err
	}
	return len(paths), nil
}
