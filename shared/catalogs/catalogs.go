// Package catalogs opens the Iceberg catalog icekeeper maintains tables in.
//
// Settings follow iceberg-go's own CLI: a catalog type (sql, glue, rest,
// hive), a catalog name, --uri, --warehouse, and a .iceberg-go.yaml file
// (iceberg-go's format) whose entry for the catalog name fills whatever the
// flags or environment left empty. The REST catalog can sign with SigV4 for
// AWS Glue's and S3 Tables' Iceberg endpoints.
//
// Only the planner and the committer open a catalog. Rewriters never do:
// they read the pinned metadata file directly.
package catalogs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/glue"
	"github.com/apache/iceberg-go/catalog/hive"
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	icebergconfig "github.com/apache/iceberg-go/config"
	"github.com/aws/aws-sdk-go-v2/aws"

	// Table file IO for s3:// locations (iceberg-go registers schemes this way).
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
	// Pure-Go SQLite driver ("sqlite") for the sql catalog.
	_ "modernc.org/sqlite"
)

// ErrConfig means the catalog settings are invalid; it is terminal.
var ErrConfig = errors.New("catalogs: invalid configuration")

// Types lists the supported catalog types.
func Types() []string { return []string{"sql", "glue", "rest", "hive"} }

// Config selects and configures a catalog.
type Config struct {
	// Type is sql, glue, rest or hive.
	Type string
	// Name is the catalog name (the entry in .iceberg-go.yaml, and the sql
	// catalog's catalog_name). Default "default".
	Name      string
	URI       string
	Warehouse string
	// ConfigFile is a .iceberg-go.yaml path; empty means ~/.iceberg-go.yaml
	// when it exists.
	ConfigFile string
	Credential string
	Token      string
	// SQLDriver and SQLDialect default to sqlite.
	SQLDriver  string
	SQLDialect string
	// SigV4 signs REST requests; SigningName and SigningRegion override the
	// service ("glue", "s3tables") and region.
	SigV4         bool
	SigningName   string
	SigningRegion string
	// MustExist refuses to open a sqlite catalog whose file does not exist:
	// opening one creates it, so a mistyped URI would silently give an
	// empty catalog (read-only commands set it).
	MustExist bool
	// Properties are passed through to the catalog (and its table IO), e.g.
	// s3.endpoint or s3.region.
	Properties map[string]string
}

// WithFile fills empty settings from the catalog's entry in the
// .iceberg-go.yaml file, as iceberg-go's CLI does. A missing implicit file is
// not an error; a missing explicit one is.
func (c Config) WithFile() (Config, error) {
	if c.Name == "" {
		c.Name = "default"
	}
	data, err := icebergconfig.LoadConfigFile(c.ConfigFile)
	if err != nil {
		return c, fmt.Errorf("%w: read %s: %v", ErrConfig, c.ConfigFile, err)
	}
	if len(data) == 0 {
		return c, nil
	}
	fc, err := icebergconfig.ParseConfig(data, c.Name)
	if err != nil {
		return c, fmt.Errorf("%w: parse catalog config: %v", ErrConfig, err)
	}
	if fc == nil {
		return c, nil
	}
	fill := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	fill(&c.Type, fc.CatalogType)
	fill(&c.URI, fc.URI)
	fill(&c.Warehouse, fc.Warehouse)
	fill(&c.Credential, fc.Credential)
	fill(&c.SQLDriver, fc.SQLDriver)
	fill(&c.SQLDialect, fc.SQLDialect)
	if fc.RestOptions != nil {
		c.SigV4 = c.SigV4 || fc.RestOptions.SigV4Enabled
		fill(&c.SigningName, fc.RestOptions.SigningName)
		fill(&c.SigningRegion, fc.RestOptions.SigningRegion)
	}
	return c, nil
}

// Validate checks the settings without connecting.
func (c Config) Validate() error {
	switch strings.ToLower(c.Type) {
	case "sql":
		if c.URI == "" {
			return fmt.Errorf("%w: sql catalog needs a uri (ICEKEEPER_CATALOG_URI or --uri), e.g. file:/tmp/catalog.db", ErrConfig)
		}
	case "rest":
		if c.URI == "" {
			return fmt.Errorf("%w: rest catalog needs a uri (ICEKEEPER_CATALOG_URI or --uri)", ErrConfig)
		}
	case "hive":
		if c.URI == "" {
			return fmt.Errorf("%w: hive catalog needs a uri (ICEKEEPER_CATALOG_URI or --uri), e.g. thrift://host:9083", ErrConfig)
		}
	case "glue":
	case "":
		return fmt.Errorf("%w: no catalog type (ICEKEEPER_CATALOG_TYPE or --catalog: one of %s)", ErrConfig, strings.Join(Types(), ", "))
	default:
		return fmt.Errorf("%w: unknown catalog type %q (one of %s)", ErrConfig, c.Type, strings.Join(Types(), ", "))
	}
	return nil
}

// Open connects to the catalog. awsCfg is used by glue and by SigV4 REST.
func Open(ctx context.Context, c Config, awsCfg aws.Config) (catalog.Catalog, error) {
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
		// iceberg-go reads glue.region and glue.endpoint only when it loads
		// its own AWS configuration; with the one given here it would
		// silently call the default region's Glue. Apply them to a copy.
		gcfg := awsCfg.Copy()
		if r := props[glue.Region]; r != "" {
			gcfg.Region = r
		}
		if ep := props[glue.Endpoint]; ep != "" {
			gcfg.BaseEndpoint = aws.String(ep)
		}
		opts := []glue.Option{glue.WithAwsConfig(gcfg)}
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

// ParseProperties parses "k=v,k=v" (the ICEKEEPER_CATALOG_PROPERTIES form).
func ParseProperties(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%w: catalog property %q: want key=value", ErrConfig, kv)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}

// FormatProperties is the inverse of ParseProperties, sorted by key.
func FormatProperties(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}
