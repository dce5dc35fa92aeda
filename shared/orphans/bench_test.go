package orphans

// Benchmarks of orphan cleanup's safety checks, for docs/PERFORMANCE.md
// ("Orphan cleanup's safety checks"): measurements, not pass/fail. Each
// cleanup walks the catalog (Shared: every namespace listed, every table
// loaded, to rule out a table inside the location) and reads every
// metadata file of the table's log (Referenced, in the planner, in the
// committer and in each listing task, and Still before each deletion
// part).
//
//	go test -run '^$' -bench . -benchtime 5x ./shared/orphans
//
// Over a sqlite catalog and a local warehouse: the requests counted are
// what a Glue or REST catalog and S3 would serve; the times are those of
// local calls, a floor for remote ones.

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
)

// countingCatalog counts the catalog requests Shared makes.
type countingCatalog struct {
	Catalog
	requests atomic.Int64
}

func (c *countingCatalog) ListNamespaces(ctx context.Context, parent table.Identifier) ([]table.Identifier, error) {
	c.requests.Add(1)
	return c.Catalog.ListNamespaces(ctx, parent)
}

func (c *countingCatalog) ListTables(ctx context.Context, ns table.Identifier) iter.Seq2[table.Identifier, error] {
	c.requests.Add(1)
	return c.Catalog.ListTables(ctx, ns)
}

func (c *countingCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	c.requests.Add(1)
	return c.Catalog.LoadTable(ctx, ident)
}

// BenchmarkShared_CatalogWalk: one cleanup's catalog walk over 100 and
// 1,000 tables in 10 namespaces (no table inside the location: the walk
// loads every one).
func BenchmarkShared_CatalogWalk(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("tables=%d", n), func(b *testing.B) {
			ctx := context.Background()
			f := setup(b)
			for i := range 10 {
				if err := f.cat.CreateNamespace(ctx, table.Identifier{"ns" + strconv.Itoa(i)}, nil); err != nil {
					b.Fatal(err)
				}
			}
			var tbl *table.Table
			for i := range n {
				t, err := f.cat.CreateTable(ctx, table.Identifier{"ns" + strconv.Itoa(i%10), "t" + strconv.Itoa(i)}, sampletable.Schema())
				if err != nil {
					b.Fatal(err)
				}
				if tbl == nil {
					tbl = t
				}
			}
			cc := &countingCatalog{Catalog: f.cat}
			runs := 0
			for b.Loop() {
				if err := Shared(ctx, tbl, nil, cc); err != nil {
					b.Fatal(err)
				}
				runs++
			}
			b.ReportMetric(float64(cc.requests.Load())/float64(runs), "catalog-requests/op")
		})
	}
}

// countingIO counts the files Referenced opens, by kind.
type countingIO struct {
	icebergio.IO
	metadata, other atomic.Int64
}

func (c *countingIO) Open(name string) (icebergio.File, error) {
	if strings.Contains(name, ".metadata.json") {
		c.metadata.Add(1)
	} else {
		c.other.Add(1)
	}
	return c.IO.Open(name)
}

// BenchmarkReferenced_MetadataLog: what one check of a table reads with a
// metadata log of 100 files (write.metadata.previous-versions-max 100,
// the table's 101st commit), the table's snapshots 7 appends and a
// position delete.
func BenchmarkReferenced_MetadataLog(b *testing.B) {
	ctx := context.Background()
	f := setup(b)
	tbl := f.create(b, "log", sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 6, RowsPerFile: 20, PositionDeletes: true})
	for i := 0; countLog(tbl) < 100; i++ {
		txn := tbl.NewTransaction()
		if err := txn.SetProperties(iceberg.Properties{table.MetadataPreviousVersionsMaxKey: "100", "bench.commit": strconv.Itoa(i)}); err != nil {
			b.Fatal(err)
		}
		var err error
		if tbl, err = txn.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cio := &countingIO{IO: fsys}
	runs := 0
	for b.Loop() {
		if _, err := Referenced(ctx, tbl, cio, nil); err != nil {
			b.Fatal(err)
		}
		runs++
	}
	b.ReportMetric(float64(countLog(tbl)), "log-files")
	b.ReportMetric(float64(len(tbl.Metadata().Snapshots())), "snapshots")
	b.ReportMetric(float64(cio.metadata.Load())/float64(runs), "metadata-reads/op")
	b.ReportMetric(float64(cio.other.Load())/float64(runs), "manifest-reads/op")
}

func countLog(tbl *table.Table) int {
	n := 0
	for range tbl.Metadata().PreviousFiles() {
		n++
	}
	return n
}
