package main

import (
	"context"
	"fmt"
	"io"

	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/health"
)

// runSample creates an uncompacted merge-on-read sample table in the
// configured catalog, to practise on: many small files, position deletes
// (v2) or deletion vectors (v3), and equality deletes.
func runSample(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sample", stderr)
	version := fs.Int("format-version", 2, "Iceberg format version: 2 (position deletes) or 3 (deletion vectors)")
	partitions := fs.Int("partitions", 3, "number of region partitions (0: unpartitioned)")
	files := fs.Int("files", 10, "appends; each writes one small file per partition")
	rows := fs.Int("rows-per-file", 400, "rows per file")
	cf := addCatalogFlags(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return exitError{code: exitUsage, err: fmt.Errorf("sample takes one table (namespace.table), got %d arguments", len(pos))}
	}
	ident, err := tableIdent(pos[0])
	if err != nil {
		return err
	}
	if *version != 2 && *version != 3 || *partitions < 0 || *files < 1 || *rows < 1 {
		return exitError{code: exitUsage, err: fmt.Errorf("sample: want --format-version 2 or 3, --partitions >= 0, --files and --rows-per-file >= 1")}
	}
	_, cat, err := cf.openCatalog(ctx, true)
	if err != nil {
		return err
	}
	tbl, err := sampletable.Create(ctx, cat, ident, sampletable.Options{
		FormatVersion: *version, Partitions: *partitions, Files: *files, RowsPerFile: *rows,
		PositionDeletes: true, EqualityDeletes: true,
	})
	if err != nil {
		return exitError{code: exitFailed, err: err}
	}
	st, err := health.Measure(ctx, tbl)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "created %s at %s: %d data files, %d delete files, %s\n", pos[0], tbl.Location(), st.DataFiles, st.DeleteFiles(), humanBytes(st.DataBytes))
	return nil
}
