// Package catalogs opens the Iceberg catalog icekeeper maintains tables in,
// as its settings say (package catalogconfig, which follows iceberg-go's own
// CLI). The REST catalog can sign with SigV4 for AWS Glue's and S3 Tables'
// Iceberg endpoints.
//
// Only the planner and the committer open a catalog. Rewriters never do:
// they read the pinned metadata file directly.
package catalogs

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/glue"
	"github.com/apache/iceberg-go/catalog/hive"
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/icekeeper/icekeeper/shared/catalogs/catalogconfig"

	// Table file IO for s3:// locations (iceberg-go registers schemes this way).
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
	// Pure-Go SQLite driver ("sqlite") for the sql catalog.
	_ "modernc.org/sqlite"
)

// ErrConfig means the catalog settings are invalid; it is terminal.
var ErrConfig = catalogconfig.ErrConfig

// Config selects and configures a catalog (package catalogconfig).
type Config = catalogconfig.Config

// Open connects to the catalog. awsCfg is used by glue and by SigV4 REST.
// Its tables read and write their files through package fileio.
func Open(ctx context.Context, c Config, awsCfg aws.Config) (catalog.Catalog, error) {
	cat, err := open(ctx, c, awsCfg)
	if err != nil {
		return nil, err
	}
	return withFileIO(cat), nil
}

// OpenNative connects to the catalog with iceberg-go's own file IO for its
// tables (the benchmark's baseline: iceberg-go as it is).
func OpenNative(ctx context.Context, c Config, awsCfg aws.Config) (catalog.Catalog, error) {
	return open(ctx, c, awsCfg)
}

func open(ctx context.Context, c Config, awsCfg aws.Config) (catalog.Catalog, error) {
	if c.Name == "" {
		c.Name = "default"
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	props := iceberg.Properties{}
	for k, v := range c.Properties {
		props[k] = v
	}
	switch strings.ToLower(c.Type) {
	case "sql":
		props["type"] = "sql"
		props["uri"] = c.URI
		props["warehouse"] = c.Warehouse
		driver := orDefault(c.SQLDriver, "sqlite")
		if driver == "sqliteshim" {
			// iceberg-go's CLI names its sqlite driver sqliteshim (bun's
			// shim); here the pure-Go modernc driver is registered as sqlite.
			driver = "sqlite"
		}
		props[sqlcat.DriverKey] = driver
		if driver == "sqlite" {
			props["uri"] = withBusyTimeout(c.URI)
		}
		if c.MustExist && driver == "sqlite" {
			if path := sqlitePath(c.URI); path != "" {
				if _, err := os.Stat(path); err != nil {
					return nil, fmt.Errorf("%w: no sqlite catalog at %s (check the URI %q; a missing file is not created here)", ErrConfig, path, c.URI)
				}
			}
		}
		props[sqlcat.DialectKey] = orDefault(c.SQLDialect, "sqlite")
		if _, ok := props["init_catalog_tables"]; !ok {
			props["init_catalog_tables"] = "true"
		}
		cat, err := catalog.Load(ctx, c.Name, props)
		if err != nil {
			return nil, fmt.Errorf("catalogs: open sql catalog %s: %w", c.URI, err)
		}
		return cat, nil
	case "glue":
		if c.Warehouse != "" {
			// Where new tables go when their database has no location
			// (iceberg-go's default table location).
			props["warehouse"] = c.Warehouse
		}
		// glue.region and glue.endpoint go to the Glue client alone
		// (third_party/iceberg-go's patch, ICEKEEPER.md): the catalog hands
		// this configuration to the file IO of its tables, and an endpoint
		// set on it would send every object request to Glue's endpoint.
		opts := []glue.Option{glue.WithAwsConfig(awsCfg)}
		if len(props) > 0 {
			opts = append(opts, glue.WithAwsProperties(glue.AwsProperties(props)))
		}
		cat, err := glue.NewCatalog(opts...)
		if err != nil {
			return nil, fmt.Errorf("catalogs: open glue catalog: %w", err)
		}
		return cat, nil
	case "rest":
		opts := []rest.Option{rest.WithAwsConfig(awsCfg)}
		if c.Token != "" {
			opts = append(opts, rest.WithOAuthToken(c.Token))
		} else if c.Credential != "" {
			opts = append(opts, rest.WithCredential(c.Credential))
		}
		if c.Warehouse != "" {
			opts = append(opts, rest.WithWarehouseLocation(c.Warehouse))
		}
		if c.SigV4 {
			opts = append(opts, rest.WithSigV4())
		}
		if c.SigningName != "" || c.SigningRegion != "" {
			opts = append(opts, rest.WithSigV4RegionSvc(c.SigningRegion, c.SigningName))
		}
		if len(props) > 0 {
			opts = append(opts, rest.WithAdditionalProps(props))
		}
		cat, err := rest.NewCatalog(ctx, c.Name, c.URI, opts...)
		if err != nil {
			return nil, fmt.Errorf("catalogs: open rest catalog %s: %w", c.URI, err)
		}
		return cat, nil
	case "hive":
		props[hive.URI] = c.URI
		if c.Warehouse != "" {
			props[hive.Warehouse] = c.Warehouse
		}
		cat, err := hive.NewCatalog(props)
		if err != nil {
			return nil, fmt.Errorf("catalogs: open hive catalog %s: %w", c.URI, err)
		}
		return cat, nil
	}
	return nil, fmt.Errorf("%w: unknown catalog type %q", ErrConfig, c.Type)
}

// sqlitePath is the file a sqlite URI names ("file:/p/c.db?mode=rwc",
// "/p/c.db"), or "" for an in-memory database.
// withBusyTimeout makes a sqlite connection wait up to 10 s for another
// writer's lock instead of failing at once with SQLITE_BUSY (the catalog's
// writers are the committer and every other engine committing to the same
// file), unless the URI sets busy_timeout itself. modernc.org/sqlite reads
// pragmas from the URI's _pragma parameters.
func withBusyTimeout(uri string) string {
	if strings.Contains(uri, "busy_timeout") || strings.Contains(uri, ":memory:") {
		return uri
	}
	sep := "?"
	if strings.Contains(uri, "?") {
		sep = "&"
	}
	return uri + sep + "_pragma=busy_timeout(10000)"
}

func sqlitePath(uri string) string {
	p := strings.TrimPrefix(uri, "file:")
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	if p == "" || strings.Contains(p, ":memory:") {
		return ""
	}
	return p
}

// OpenWithFile opens the catalog c describes, completed from
// .iceberg-go.yaml as iceberg-go's CLI does (Config.WithFile).
func OpenWithFile(ctx context.Context, c Config, awsCfg aws.Config) (catalog.Catalog, error) {
	cc, err := c.WithFile()
	if err != nil {
		return nil, err
	}
	return Open(ctx, cc, awsCfg)
}

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}
