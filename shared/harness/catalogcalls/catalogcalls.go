// Package catalogcalls counts the calls icekeeper's functions make to
// their Iceberg catalog, and what those calls are on AWS Glue's Data
// Catalog, which bills its requests: $1.00 per million above an account's
// first million a month (AWS Glue pricing, "Data Catalog storage and
// requests"; the worked example on aws.amazon.com/lake-formation/pricing,
// read 2026-12-05). The harnesses (the soak, the sweep benchmark) wrap the
// catalog they hand the functions, so that the writers' and the harness's
// own calls are not counted.
//
// Invariants: the wrapper only counts and forwards, every call reaches the
// wrapped catalog unchanged and its results come back unchanged; a table
// it loads commits through it (so commits are counted), reading and
// writing its files as the wrapped catalog's table does.
//
// The Glue requests are those iceberg-go's glue catalog sends for each
// call (catalog/glue/glue.go, v0.7.0): LoadTable and CheckTableExists a
// GetTable; CommitTable a GetTable (the current table, for the
// requirements) and an UpdateTable; ListTables a GetTables call per page,
// ListNamespaces a GetDatabases call per page. A page holds at most 100
// (MaxResults' range in Glue's API reference is 1 to 100; iceberg-go
// leaves it to Glue), so the pages counted, one per 100, are the fewest
// Glue can answer with. LoadNamespaceProperties and CheckNamespaceExists
// are a GetDatabase.
//
// SetLatency holds each of those Glue requests for a while before the
// call goes on, as a catalog across the network would: the emulated
// catalogs answer in microseconds.
package catalogcalls

import (
	"context"
	"iter"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// GluePageSize is the most tables (databases) a GetTables (GetDatabases)
// page can hold.
const GluePageSize = 100

// The catalog's methods, as Counts.Calls names them.
const (
	LoadTable               = "LoadTable"
	CommitTable             = "CommitTable"
	CheckTableExists        = "CheckTableExists"
	ListTables              = "ListTables"
	ListNamespaces          = "ListNamespaces"
	LoadNamespaceProperties = "LoadNamespaceProperties"
	CheckNamespaceExists    = "CheckNamespaceExists"
)

// Counter is a catalog that counts the calls made through it.
type Counter struct {
	catalog.Catalog

	mu      sync.Mutex
	calls   map[string]int64
	glue    int64
	latency atomic.Int64
}

// SetLatency holds each Glue request a call stands for d before the call
// goes on (0: none); a call whose context ends meanwhile fails with the
// context's error, as a network call would.
func (c *Counter) SetLatency(d time.Duration) { c.latency.Store(int64(d)) }

// hold waits the latency of n Glue requests.
func (c *Counter) hold(ctx context.Context, n int64) error {
	d := time.Duration(c.latency.Load()) * time.Duration(n)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Wrap returns a counter of the calls made to cat through it.
func Wrap(cat catalog.Catalog) *Counter {
	return &Counter{Catalog: cat, calls: map[string]int64{}}
}

// Counts are the calls made through a Counter.
type Counts struct {
	// Calls counts the catalog's methods by name ("LoadTable").
	Calls map[string]int64 `json:"calls"`
	// GlueRequests is what the calls are on AWS Glue's Data Catalog.
	GlueRequests int64 `json:"glue_requests"`
}

// Call is how many calls of method name the counts hold.
func (c Counts) Call(name string) int64 { return c.Calls[name] }

// Add is the sum of c and o (of two processes' counters).
func (c Counts) Add(o Counts) Counts {
	sum := Counts{Calls: map[string]int64{}, GlueRequests: c.GlueRequests + o.GlueRequests}
	for _, m := range []map[string]int64{c.Calls, o.Calls} {
		for name, n := range m {
			sum.Calls[name] += n
		}
	}
	return sum
}

// Counts returns the calls counted so far.
func (c *Counter) Counts() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Counts{Calls: maps.Clone(c.calls), GlueRequests: c.glue}
}

func (c *Counter) add(method string, glueRequests int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[method]++
	c.glue += glueRequests
}

// pages is how many Glue pages n items take (an empty listing is one).
func pages(n int) int64 { return int64(max(1, (n+GluePageSize-1)/GluePageSize)) }

// own makes a loaded table commit through the counter.
func (c *Counter) own(tbl *table.Table) *table.Table {
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, c)
}

func (c *Counter) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	c.add(LoadTable, 1)
	if err := c.hold(ctx, 1); err != nil {
		return nil, err
	}
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	return c.own(tbl), nil
}

func (c *Counter) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	c.add(CommitTable, 2)
	if err := c.hold(ctx, 2); err != nil {
		return table.Metadata(nil), "", err
	}
	return c.Catalog.CommitTable(ctx, ident, reqs, updates)
}

func (c *Counter) CheckTableExists(ctx context.Context, ident table.Identifier) (bool, error) {
	c.add(CheckTableExists, 1)
	if err := c.hold(ctx, 1); err != nil {
		return false, err
	}
	return c.Catalog.CheckTableExists(ctx, ident)
}

// ListTables counts one call, and a Glue page per 100 tables the caller
// reads (a caller that stops early reads fewer pages); the latency is
// held before each page.
func (c *Counter) ListTables(ctx context.Context, ns table.Identifier) iter.Seq2[table.Identifier, error] {
	return func(yield func(table.Identifier, error) bool) {
		n := 0
		defer func() { c.add(ListTables, pages(n)) }()
		if err := c.hold(ctx, 1); err != nil {
			yield(nil, err)
			return
		}
		for ident, err := range c.Catalog.ListTables(ctx, ns) {
			if err == nil {
				if n > 0 && n%GluePageSize == 0 {
					if err := c.hold(ctx, 1); err != nil {
						yield(nil, err)
						return
					}
				}
				n++
			}
			if !yield(ident, err) {
				return
			}
		}
	}
}

func (c *Counter) ListNamespaces(ctx context.Context, parent table.Identifier) ([]table.Identifier, error) {
	out, err := c.Catalog.ListNamespaces(ctx, parent)
	c.add(ListNamespaces, pages(len(out)))
	if herr := c.hold(ctx, pages(len(out))); herr != nil {
		return nil, herr
	}
	return out, err
}

func (c *Counter) LoadNamespaceProperties(ctx context.Context, ns table.Identifier) (iceberg.Properties, error) {
	c.add(LoadNamespaceProperties, 1)
	if err := c.hold(ctx, 1); err != nil {
		return nil, err
	}
	return c.Catalog.LoadNamespaceProperties(ctx, ns)
}

func (c *Counter) CheckNamespaceExists(ctx context.Context, ns table.Identifier) (bool, error) {
	c.add(CheckNamespaceExists, 1)
	if err := c.hold(ctx, 1); err != nil {
		return false, err
	}
	return c.Catalog.CheckNamespaceExists(ctx, ns)
}
