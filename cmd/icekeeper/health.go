package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/healthpage"
	"github.com/icekeeper/icekeeper/shared/orphans"
)

// writePage writes the health page to path, replacing it only once the
// whole page is written.
func writePage(path string, p healthpage.Page) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".health-*.html")
	if err != nil {
		return fmt.Errorf("write page: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write page: %w", err)
	}
	if err := healthpage.Render(tmp, p); err != nil {
		tmp.Close()
		return fmt.Errorf("write page: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write page: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write page: %w", err)
	}
	return nil
}

// defaultOrphanAge is how old an unreferenced file must be to count as an
// orphan: Iceberg's DeleteOrphanFiles default, which leaves writers that
// have not committed yet plenty of time.
const defaultOrphanAge = 72 * time.Hour

// maxOrphansListed bounds the orphan paths the readable report prints.
const maxOrphansListed = 20

// runHealth prints the health report of one table. It only reads: the
// catalog, the table's metadata and, with --orphans, a listing of the
// table's location.
func runHealth(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("health", stderr)
	asJSON := addOutputFlags(fs, "the report")
	listOrphans := fs.Bool("orphans", false, "also list the table location for files no snapshot references (slow on large tables; S3 LIST requests)")
	orphanAge := fs.Duration("orphans-older-than", defaultOrphanAge, "with --orphans: only count files older than this")
	htmlFile := fs.String("html", "", "also write the report as one self-contained HTML page with charts to this file")
	cf := addCatalogFlags(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if *orphanAge < 0 {
		return exitError{code: 2, err: fmt.Errorf("--orphans-older-than %s: want a non-negative duration", *orphanAge)}
	}
	name, cfg, tbl, err := cf.loadOneTable(ctx, "health", pos)
	if err != nil {
		return err
	}
	th, err := health.ThresholdsFor(tbl.Properties(), cfg.TargetFileSize)
	if err != nil {
		return fmt.Errorf("health %s: %w", name, err)
	}
	now := time.Now()
	rep, err := health.Assess(ctx, tbl, now, th)
	if err != nil {
		return err
	}
	if *listOrphans {
		olderThan := now.Add(-*orphanAge)
		found, err := orphans.Find(ctx, tbl, orphans.Prefix{}, olderThan)
		if err != nil {
			return err
		}
		files, n := orphans.Paths(found.Orphans)
		rep.AddOrphans(files, n, olderThan)
	}
	if *htmlFile != "" {
		if err := writePage(*htmlFile, healthpage.New(rep, tbl.Metadata())); err != nil {
			return fmt.Errorf("health %s: %w", name, err)
		}
	}
	if *asJSON {
		return printJSON(stdout, rep)
	}
	printHealth(stdout, rep)
	if *htmlFile != "" {
		fmt.Fprintf(stdout, "page: %s\n", *htmlFile)
	}
	return nil
}

func printHealth(w io.Writer, r health.Report) {
	fmt.Fprintf(w, "table %s", r.Table)
	if r.SnapshotID != 0 {
		fmt.Fprintf(w, " at snapshot %d", r.SnapshotID)
	}
	fmt.Fprintf(w, "\nmetadata %s\n", r.MetadataLocation)
	d := r.Debt
	fmt.Fprintf(w, "health score %.1f (0 = healthy, 100 = worst; debt: files %.2f, delete files %.2f, deleted rows %.2f, snapshots %.2f, manifests %.2f)\n\n",
		r.Score, d.Files, d.DeleteFiles, d.DeletedRows, d.Snapshots, d.Manifests)

	th := r.Thresholds
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  data files\t%d\t%s, %d records\n", r.DataFiles, humanBytes(r.DataBytes), r.Records)
	fmt.Fprintf(tw, "  small files\t%d\tbelow %s (target %s)\n", r.SmallFiles, humanBytes(th.SmallFileBytes), humanBytes(th.TargetFileSize))
	fmt.Fprintf(tw, "  average file size\t%s\t\n", humanBytes(r.AvgFileBytes))
	fmt.Fprintf(tw, "  delete files\t%d\tposition %d / DV %d / equality %d, %s\n", r.DeleteFiles, r.PositionDeleteFiles, r.DeletionVectors, r.EqualityDeleteFiles, humanBytes(r.DeleteBytes))
	fmt.Fprintf(tw, "  delete rows\t%d\tposition %d / DV %d / equality %d (keys)\n", r.PositionDeleteRows+r.DeletionVectorRows+r.EqualityDeleteRows, r.PositionDeleteRows, r.DeletionVectorRows, r.EqualityDeleteRows)
	fmt.Fprintf(tw, "  deleted-row ratio\t%s\tfiles over %.0f%%: %d\n", percent(r.DeletedRowRatio), th.DeleteRatio*100, r.FilesOverDeleteRatio)
	fmt.Fprintf(tw, "  snapshots\t%d\t%d expirable (keep %d, max age %s), oldest %s\n", r.Snapshots, r.ExpirableSnapshots, th.MaxSnapshots, humanDuration(th.MaxSnapshotAge), oldest(r))
	fmt.Fprintf(tw, "  manifests\t%d\tdata %d / delete %d, %s\n", r.Manifests(), r.DataManifests, r.DeleteManifests, humanBytes(r.ManifestBytes))
	fmt.Fprintf(tw, "  metadata file\t%s\t%d previous metadata files\n", humanBytes(r.MetadataBytes), r.PreviousMetadataFiles)
	_ = tw.Flush()

	if len(r.Partitions) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "partition\tspec\tdata files\tsmall\tavg size\trecords\tpos del\tDV\teq del\tpos/DV rows\teq rows\tdeleted\t")
		for _, p := range r.Partitions {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n",
				p.Partition, p.SpecID, p.DataFiles, p.SmallFiles, humanBytes(p.AvgFileBytes), p.Records,
				p.PositionDeleteFiles, p.DeletionVectors, p.EqualityDeleteFiles,
				p.PositionDeleteRows+p.DeletionVectorRows, p.EqualityDeleteRows, percent(p.DeletedRowRatio))
		}
		_ = tw.Flush()
	}
	if len(r.Columns) > 0 {
		// How well the files are clustered on each column, from the
		// manifests' bounds: what min/max pruning can skip.
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "column\tfiles with bounds\toverlap depth\tfiles per point lookup\t")
		for _, c := range r.Columns {
			note := ""
			if c.OneValue {
				note = " (one value)"
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f%s\t\n", c.Column, c.Files, c.OverlapDepth, c.PointLookupFiles, note)
		}
		_ = tw.Flush()
	}
	if r.CompactionPlanSkipped != "" {
		fmt.Fprintf(w, "\ncompaction plan skipped: %s\n", r.CompactionPlanSkipped)
	}

	fmt.Fprintln(w)
	if len(r.Recommendations) == 0 {
		fmt.Fprintln(w, "recommendations: none")
	} else {
		fmt.Fprintln(w, "recommendations:")
		for _, rec := range r.Recommendations {
			fmt.Fprintf(w, "  %s: about %d files, %s\n    %s\n", rec.Action, rec.EstimatedFiles, humanBytes(rec.EstimatedBytes), rec.Why)
		}
	}
	if len(r.HotPartitions) > 0 {
		fmt.Fprintf(w, "\nhot partitions (written within %s):\n", r.Thresholds.HotIdle)
		for _, h := range r.HotPartitions {
			fmt.Fprintf(w, "  %s: %s\n", h.Partition, h.Why)
		}
	}
	if o := r.Orphans; o != nil {
		fmt.Fprintf(w, "\norphan files older than %s: %d, %s\n", o.OlderThan.Format(time.RFC3339), len(o.Files), humanBytes(o.Bytes))
		for i, f := range o.Files {
			if i == maxOrphansListed {
				fmt.Fprintf(w, "  ... and %d more (--json lists them all)\n", len(o.Files)-maxOrphansListed)
				break
			}
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
}

func percent(ratio float64) string { return fmt.Sprintf("%.1f%%", ratio*100) }

func oldest(r health.Report) string {
	if r.OldestSnapshotAt == nil {
		return "none"
	}
	return fmt.Sprintf("%s ago (%s)", humanDuration(r.OldestSnapshotAge()), r.OldestSnapshotAt.Format(time.RFC3339))
}

// humanDuration prints whole days as days ("5d", "2d3h0m0s").
func humanDuration(d time.Duration) string {
	d = d.Round(time.Second)
	const day = 24 * time.Hour
	if d < day {
		return d.String()
	}
	days, rest := d/day, d%day
	if rest == 0 {
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dd%s", days, rest)
}
