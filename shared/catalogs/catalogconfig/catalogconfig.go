// Package catalogconfig says which Iceberg catalog to open, as iceberg-go's
// own CLI does: a catalog type (sql, glue, rest, hive), a catalog name,
// --uri, --warehouse, and a .iceberg-go.yaml file (iceberg-go's format)
// whose entry for the catalog name fills whatever the flags or environment
// left empty. It links no catalog client (package catalogs opens them), so
// the configuration of a function that never opens a catalog (the
// rewriter) does not link one.
package catalogconfig

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	icebergconfig "github.com/apache/iceberg-go/config"
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
