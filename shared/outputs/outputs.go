// Package outputs finds and removes the data files a job's rewriter attempts
// wrote, through the table's own iceberg-go FileIO.
//
// Every attempt writes its files with its attempt id (a UUID) in every file
// name (iceberg-go's write UUID), under the table's data location. So the
// files of an attempt that crashed before it could say what it wrote can
// still be found by listing the data location for names holding the id.
//
// Removal is idempotent: a file that is already gone is not an error.
package outputs

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// DataRoot returns where the table writes data files: write.data.path, or
// the table location's data/ folder.
func DataRoot(tbl *table.Table) string {
	if p := tbl.Properties()[table.WriteDataPathKey]; p != "" {
		return strings.TrimSuffix(p, "/")
	}
	return strings.TrimSuffix(tbl.Location(), "/") + "/data"
}

// Remove deletes the files at paths. Missing files are skipped.
func Remove(ctx context.Context, tbl *table.Table, paths []string) error {
	if len(paths) == 0 {
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
// names contain any of the attempt ids.
func FindAttemptFiles(ctx context.Context, tbl *table.Table, attempts []string) ([]string, error) {
	if len(attempts) == 0 {
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
	root := DataRoot(tbl)
	var found []string
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
		name := path[strings.LastIndex(path, "/")+1:]
		for _, a := range attempts {
			if a != "" && strings.Contains(name, a) {
				found = append(found, path)
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("outputs: list %s: %w", root, err)
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
