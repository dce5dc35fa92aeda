package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/icekeeper/icekeeper/shared/expire"
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
)

// runExpire expires TABLE's snapshots with its retention, as an expiry job
// through the pipeline (planner, committer), or, with --dry-run, says what
// would be expired and freed without changing anything.
func runExpire(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	for _, a := range args {
		if a == "--dry-run" || a == "-dry-run" {
			return runExpireDryRun(ctx, args, stdout, stderr)
		}
	}
	return runJob(ctx, "expire", args, stdout, stderr, localrun.RunExpiry)
}

// expiryPreview is what --dry-run prints.
type expiryPreview struct {
	Table      string         `json:"table"`
	Snapshots  int            `json:"snapshots"`
	Expire     []string       `json:"expire_snapshot_ids"`
	RemoveRefs []string       `json:"remove_refs,omitempty"`
	Files      int            `json:"files"`
	Bytes      int64          `json:"bytes"`
	ByKind     map[string]int `json:"files_by_kind"`
	Retention  string         `json:"retention"`
	NothingDue bool           `json:"nothing_due"`
	// NextDue is when the next snapshot or ref comes due (RFC 3339),
	// when one ever does.
	NextDue string `json:"next_due,omitempty"`
}

func runExpireDryRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("expire", stderr)
	fs.Bool("dry-run", true, "only say what would be expired and freed")
	fs.Bool("local", false, "(with --dry-run: unused)")
	fs.Bool("q", false, "(with --dry-run: unused)")
	fs.Bool("v", false, "(with --dry-run: unused)")
	asJSON := addOutputFlags(fs, "the preview")
	cf := addCatalogFlags(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	name, _, tbl, err := cf.loadOneTable(ctx, "expire", pos)
	if err != nil {
		return err
	}
	if gc, err := expire.GCEnabled(tbl.Properties()); err != nil || !gc {
		return exitError{code: exitNothingToDo, err: errors.Join(err, expire.ErrGCDisabled)}
	}
	ret, err := expire.RetentionFor(tbl.Properties())
	if err != nil {
		return exitError{code: 2, err: err}
	}
	now := time.Now()
	sel := expire.Select(tbl.Metadata(), now, ret)
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	files, err := expire.Unreferenced(ctx, fsys, tbl.Metadata(), sel)
	if err != nil {
		return err
	}
	p := expiryPreview{Table: name, Snapshots: len(tbl.Metadata().Snapshots()), RemoveRefs: sel.RemovedRefs, Files: len(files), ByKind: map[string]int{},
		Retention: fmt.Sprintf("keep %d per branch, expire after %s", ret.MinSnapshotsToKeep, ret.MaxSnapshotAge), NothingDue: sel.Empty()}
	if due, ok := expire.NextDue(tbl.Metadata(), now, ret); ok {
		p.NextDue = due.UTC().Format(time.RFC3339)
	}
	for _, id := range sel.ExpiredIDs() {
		p.Expire = append(p.Expire, fmt.Sprint(id))
	}
	for _, f := range files {
		p.Bytes += f.Bytes
		p.ByKind[f.Kind]++
	}
	if *asJSON {
		return printJSON(stdout, p)
	}
	fmt.Fprintf(stdout, "table %s: %d snapshots (%s)\n", name, p.Snapshots, p.Retention)
	if p.NothingDue {
		if p.NextDue != "" {
			fmt.Fprintf(stdout, "nothing is due for expiry; the next comes due at %s\n", p.NextDue)
		} else {
			fmt.Fprintln(stdout, "nothing is due for expiry, and nothing ever comes due: every snapshot is one its branch or tag keeps")
		}
		return exitError{code: exitNothingToDo, err: errors.New("nothing to do: no snapshot is due for expiry"), reported: true}
	}
	fmt.Fprintf(stdout, "would expire %d snapshots", len(p.Expire))
	if len(p.RemoveRefs) > 0 {
		fmt.Fprintf(stdout, " and remove refs %v", p.RemoveRefs)
	}
	fmt.Fprintf(stdout, ", freeing %d files (%s): %d data, %d delete, %d manifests, %d manifest lists, %d statistics\n", p.Files, humanBytes(p.Bytes),
		p.ByKind[expire.KindData], p.ByKind[expire.KindDelete], p.ByKind[expire.KindManifest], p.ByKind[expire.KindManifestList], p.ByKind[expire.KindStatistics])
	fmt.Fprintln(stdout, "dry run: nothing was changed")
	return nil
}
