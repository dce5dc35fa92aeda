package tests

import (
	"context"
	"github.com/icekeeper/icekeeper/shared/harness/gluestandin"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/harness/stages"
	"github.com/icekeeper/icekeeper/shared/jobs"
)

// TestCatalogs_PipelineCompactsOverEachCatalog: the whole pipeline over
// each catalog kind, on a table with every kind of delete.
func TestCatalogs_PipelineCompactsOverEachCatalog(t *testing.T) {
	overCatalogs(t, func(t *testing.T, e *env) {
		e.createTable(smallTable)
		r := e.compactAndRequireSame()
		if s := e.stats(); s.DataFiles != r.Groups || s.DeleteFiles() != 0 {
			t.Fatalf("after compaction %+v, want %d files and no deletes", s, r.Groups)
		}
	})
}

// TestCatalogs_GlueVersionConflictIsRetried: another writer commits to the
// Glue table between the committer's read of the table and its UpdateTable.
// Glue refuses the stale VersionId (ConcurrentModificationException); the
// committer treats it as a conflict: it reloads, re-validates, rebuilds and
// commits, and the other writer's rows are kept.
func TestCatalogs_GlueVersionConflictIsRetried(t *testing.T) {
	g, url := gluestandin.ForTest(t)
	dir := t.TempDir()
	e := setup(t, func(c *config.Config) {
		c.Catalog = catalogs.Config{Type: "glue", Name: "test", Warehouse: "file://" + dir + "/warehouse",
			Properties: map[string]string{"glue.endpoint": url, "glue.region": "us-east-1"}}
	})
	e.createTable(smallTable)
	r := e.plan()
	e.drainTasks()

	// The other writer, through its own connection to the same catalog.
	other, err := stages.OpenCatalog(e.ctx, e.cfg, cloud.Clients)
	if err != nil {
		t.Fatal(err)
	}
	fired := false
	g.BeforeUpdate(func(db, name string) {
		if fired {
			return
		}
		fired = true
		tbl, err := other.LoadTable(e.ctx, table.Identifier{db, name})
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := sampletable.AppendRows(e.ctx, tbl, 3_000_000, 2, 7); err != nil {
			t.Error(err)
		}
	})
	before := e.fingerprint()
	e.drainCommits()
	if !fired {
		t.Fatal("the other writer never ran")
	}
	j := e.job(r.JobID)
	if j.State != jobs.Committed {
		t.Fatalf("job %s (%s), want committed after the conflict", j.State, j.Reason)
	}
	if got := e.fingerprint(); got.Rows != before.Rows+14 {
		t.Fatalf("rows %d, want %d (the other writer's 14 kept)", got.Rows, before.Rows+14)
	}
	if n := g.Calls("UpdateTable"); n < 3 {
		t.Fatalf("UpdateTable called %d times; want the refused one, the other writer's and the retry", n)
	}
	if m := e.metrics.metricTotals(t); m["CommitConflicts"] < 1 {
		t.Fatalf("conflict not counted: %v", m)
	}
}

// TestCatalogs_RESTRequestsAreSigV4Signed: against the REST stand-in, every
// request icekeeper's catalog makes is SigV4-signed for the configured
// signing name and region (glue for AWS Glue's Iceberg REST endpoint,
// s3tables for S3 Tables'), and a catalog signing for the wrong service
// cannot even start.
func TestCatalogs_RESTRequestsAreSigV4Signed(t *testing.T) {
	for _, service := range []string{"glue", "s3tables"} {
		t.Run(service, func(t *testing.T) {
			mutate, s := withREST(t, service)
			e := setup(t, mutate)
			e.createTable(smallTable)
			e.compactAndRequireSame()
			if s.calls["GET config"] == 0 || s.calls["POST namespaces"] == 0 {
				t.Fatalf("the stand-in saw %v", s.calls)
			}
		})
	}
	t.Run("wrong signing name", func(t *testing.T) {
		mutate, _ := withREST(t, "s3tables")
		cfg := config.Defaults()
		mutate(&cfg)
		cfg.Catalog.SigningName = "glue"
		if _, err := stages.OpenCatalog(context.Background(), cfg, cloud.Clients); err == nil || !strings.Contains(err.Error(), "signature scope") {
			t.Fatalf("err %v, want the stand-in's refusal", err)
		}
	})
}
