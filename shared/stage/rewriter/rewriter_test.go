package rewriter

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/awsclients"
	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/stage"
)

// TestCatalog_OpensTheConfiguredCatalogOnFirstLoad: the rewriter's lazy
// catalog loads a table of the configured catalog, and a failed open is
// tried again rather than kept.
func TestCatalog_OpensTheConfiguredCatalogOnFirstLoad(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := config.Defaults()
	cfg.Catalog = catalogs.Config{Type: "sql", Name: "lazy", URI: "file:" + filepath.Join(dir, "cat.db"), Warehouse: "file://" + filepath.Join(dir, "wh")}
	d := &stage.Deps{Config: cfg, Clients: &awsclients.Clients{}}
	bad := *d
	bad.Config.Catalog.Type = "no-such-type"
	broken := Catalog(&bad)
	if _, err := broken.LoadTable(ctx, table.Identifier{"ns", "t"}); err == nil {
		t.Fatal("a catalog of an unknown type opened")
	}
	cat, err := catalogs.Open(ctx, cfg.Catalog, d.Clients.Config)
	if err != nil {
		t.Fatal(err)
	}
	want, err := sampletable.Create(ctx, cat, table.Identifier{"ns", "t"}, sampletable.Options{FormatVersion: 2, Files: 1, RowsPerFile: 3})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Catalog(d).LoadTable(ctx, table.Identifier{"ns", "t"})
	if err != nil || got.MetadataLocation() != want.MetadataLocation() {
		t.Fatalf("loaded %v (%v), want %s", got, err, want.MetadataLocation())
	}
	bad.Config.Catalog = cfg.Catalog // fixed: the next load opens it
	if _, err := broken.LoadTable(ctx, table.Identifier{"ns", "t"}); err != nil {
		t.Fatalf("after the configuration was fixed: %v", err)
	}
}
