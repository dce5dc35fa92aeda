package catalogs

import (
	"context"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/fileio"
)

// withFileIO makes every table the catalog loads or creates read and write
// its files through package fileio (one GET per small file, immutable
// metadata read once per process, large upload parts); commits still go
// to the catalog.
func withFileIO(cat catalog.Catalog) catalog.Catalog { return fileIOCatalog{cat} }

type fileIOCatalog struct{ catalog.Catalog }

func (c fileIOCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	return fileio.WrapTable(tbl, c.Catalog, fileio.Options{}), nil
}

func (c fileIOCatalog) CreateTable(ctx context.Context, ident table.Identifier, schema *iceberg.Schema, opts ...catalog.CreateTableOpt) (*table.Table, error) {
	tbl, err := c.Catalog.CreateTable(ctx, ident, schema, opts...)
	if err != nil {
		return nil, err
	}
	return fileio.WrapTable(tbl, c.Catalog, fileio.Options{}), nil
}
