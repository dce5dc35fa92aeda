package catalogs

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func TestOpen_SQLCatalogCreatesItsTables(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cat, err := Open(context.Background(), Config{Type: "sql", URI: "file:" + filepath.Join(dir, "c.db"), Warehouse: "file://" + dir}, aws.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if cat.CatalogType() != "sql" {
		t.Fatalf("type %s", cat.CatalogType())
	}
	if _, err := cat.ListNamespaces(context.Background(), nil); err != nil {
		t.Fatalf("list namespaces on a new catalog: %v", err)
	}
}
