package orphans

import (
	"context"
	"fmt"
	"iter"
	"path"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/storagepath"
)

// Catalog lists a catalog's namespaces and tables and loads them, to find
// the tables whose files may lie under another's location (iceberg-go's
// catalog.Catalog is one).
type Catalog interface {
	CatalogType() catalog.Type
	ListNamespaces(ctx context.Context, parent table.Identifier) ([]table.Identifier, error)
	ListTables(ctx context.Context, namespace table.Identifier) iter.Seq2[table.Identifier, error]
	LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error)
}

// writePaths are the properties that put a table's files elsewhere than
// its location (Iceberg's TableProperties WRITE_DATA_LOCATION,
// OBJECT_STORE_PATH, WRITE_FOLDER_STORAGE_LOCATION, WRITE_METADATA_LOCATION).
var writePaths = []string{"write.data.path", "write.object-storage.path", "write.folder-storage.path", table.WriteMetadataPathKey}

// Shared returns an error wrapping ErrRefused, with the reason, when tbl's
// location may hold files of another table, so that a cleanup of it must
// not run (Iceberg's DeleteOrphanFiles assumes the table owns its
// location); nil when it is the table's own. Refused are:
//   - a location that is a bucket or filesystem root, or of a scheme
//     other than the s3 family or local files;
//   - any of metadata (Found.Metadata: unreferenced files under the
//     location that look like table metadata) that is not this table's:
//     a version-hint.text other than the table's own, or a file whose
//     table-uuid differs from the table's or that cannot be read or parsed
//     as table metadata (plain, gzip or zstd);
//   - any table of cat other than tbl (same identifier) whose location or
//     write.data.path, write.object-storage.path, write.folder-storage.path
//     or write.metadata.path is inside tbl's location, or contains it;
//     every namespace is listed, nested ones too where the catalog nests
//     them. A table that is not an Iceberg table is skipped; any other
//     error listing or loading refuses, and so does a nil cat.
//
// Every read error refuses too: the decision fails safe. Only a cancelled
// ctx is returned as itself.
func Shared(ctx context.Context, tbl *table.Table, metadata []string, cat Catalog) error {
	loc := tbl.Location()
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrRefused}, args...)...)
	}
	if err := storagepath.Supported(loc); err != nil {
		return refuse("%v", err)
	}
	if storagepath.Parse(loc).Root() {
		return refuse("the table's location %s is a bucket or filesystem root", loc)
	}
	if err := foreignMetadata(ctx, tbl, metadata); err != nil {
		return err
	}
	if cat == nil {
		return refuse("the catalog cannot list its tables, so tables inside %s cannot be ruled out", loc)
	}
	return neighbours(ctx, tbl, cat)
}

// foreignMetadata refuses when one of metadata is not the table's own.
func foreignMetadata(ctx context.Context, tbl *table.Table, metadata []string) error {
	if len(metadata) == 0 {
		return nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return fmt.Errorf("%w: open table IO to read %s: %w", ErrRefused, metadata[0], err)
	}
	own := tbl.Metadata().TableUUID().String()
	for _, p := range metadata {
		if err := ctx.Err(); err != nil {
			return err
		}
		if path.Base(storagepath.Parse(p).Path) == "version-hint.text" {
			return fmt.Errorf("%w: %s is another table's version hint: the location is shared", ErrRefused, p)
		}
		uuid, err := tableUUID(fsys, p)
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			return fmt.Errorf("%w: %s looks like table metadata and cannot be read as this table's (%v): the location may be shared", ErrRefused, p, err)
		}
		if uuid != own {
			return fmt.Errorf("%w: %s belongs to another table (table-uuid %s, this table's is %s): the location is shared", ErrRefused, p, uuid, own)
		}
	}
	return nil
}

// neighbours refuses when a table of cat other than tbl keeps files
// inside tbl's location, or tbl's location is inside one of its paths.
func neighbours(ctx context.Context, tbl *table.Table, cat Catalog) error {
	self := tbl.Identifier()
	loc := tbl.Location()
	// Glue and Hive have one level of namespaces and refuse a parent.
	nested := cat.CatalogType() != catalog.Glue && cat.CatalogType() != catalog.Hive
	seen := map[string]bool{}
	var walk func(parent table.Identifier) error
	walk = func(parent table.Identifier) error {
		nss, err := cat.ListNamespaces(ctx, parent)
		if err != nil {
			return fmt.Errorf("%w: list the catalog's namespaces under %q to look for tables inside %s: %w", ErrRefused, strings.Join(parent, "."), loc, err)
		}
		for _, ns := range nss {
			key := strings.Join(ns, "\x1f")
			if seen[key] {
				continue
			}
			seen[key] = true
			for ident, err := range cat.ListTables(ctx, ns) {
				if err != nil {
					return fmt.Errorf("%w: list the tables of %s to look for tables inside %s: %w", ErrRefused, strings.Join(ns, "."), loc, err)
				}
				if slices.Equal(ident, self) {
					continue
				}
				other, err := cat.LoadTable(ctx, ident)
				if err != nil {
					if notIceberg(err) {
						continue
					}
					if cerr := ctx.Err(); cerr != nil {
						return cerr
					}
					return fmt.Errorf("%w: load %s to rule out its files inside %s: %w", ErrRefused, strings.Join(ident, "."), loc, err)
				}
				if why := overlap(loc, other); why != "" {
					return fmt.Errorf("%w: table %s %s: the location is shared", ErrRefused, strings.Join(ident, "."), why)
				}
			}
			if nested {
				if err := walk(ns); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(nil)
}

// overlap says how other's files may lie inside loc, or "".
func overlap(loc string, other *table.Table) string {
	paths := [][2]string{{"location", other.Location()}}
	for _, k := range writePaths {
		if v := other.Properties()[k]; v != "" {
			paths = append(paths, [2]string{k, v})
		}
	}
	for _, p := range paths {
		switch {
		case storagepath.Within(loc, p[1]):
			return fmt.Sprintf("keeps files at %s (its %s), inside this table's location %s", p[1], p[0], loc)
		case storagepath.Within(p[1], loc):
			return fmt.Sprintf("keeps files at %s (its %s), which holds this table's location %s", p[1], p[0], loc)
		}
	}
	return ""
}

// notIceberg says whether a load failed because the catalog's entry is not
// an Iceberg table (the Glue and Hive catalogs say so in words only).
func notIceberg(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "is not an iceberg table")
}

// Why is the reason of a refusal (an error wrapping ErrRefused): the text
// after "orphan cleanup refused: ", without the context wrapped around it.
func Why(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ErrRefused.Error()+": "); i >= 0 {
		return msg[i+len(ErrRefused.Error())+2:]
	}
	return msg
}
