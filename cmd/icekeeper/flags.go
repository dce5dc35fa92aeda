package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/awsclients"
	"github.com/icekeeper/icekeeper/shared/catalogs/catalogconfig"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/stages"
	"github.com/icekeeper/icekeeper/shared/metrics"
)

// catalogFlags are iceberg-go's CLI catalog flags.
type catalogFlags struct {
	typ, name, uri, warehouse, file, credential, token string
	driver, dialect, signName, signRegion              string
	sigv4                                              bool
	props                                              propList
}

type propList []string

func (p *propList) String() string     { return strings.Join(*p, ",") }
func (p *propList) Set(v string) error { *p = append(*p, v); return nil }

func addCatalogFlags(fs *flag.FlagSet) *catalogFlags {
	c := &catalogFlags{}
	fs.StringVar(&c.typ, "catalog", "", "catalog type: sql, glue, rest or hive")
	fs.StringVar(&c.name, "catalog-name", "", "catalog name (entry in .iceberg-go.yaml)")
	fs.StringVar(&c.uri, "uri", "", "catalog URI")
	fs.StringVar(&c.warehouse, "warehouse", "", "warehouse location")
	fs.StringVar(&c.file, "config", "", "path to .iceberg-go.yaml")
	fs.StringVar(&c.credential, "credential", "", "REST catalog credential")
	fs.StringVar(&c.token, "token", "", "REST catalog OAuth token")
	fs.StringVar(&c.driver, "sql-driver", "", "database/sql driver for the sql catalog (default sqlite)")
	fs.StringVar(&c.dialect, "sql-dialect", "", "SQL dialect for the sql catalog (default sqlite)")
	fs.BoolVar(&c.sigv4, "rest-sigv4", false, "sign REST catalog requests with SigV4")
	fs.StringVar(&c.signName, "signing-name", "", "SigV4 service name (glue, s3tables)")
	fs.StringVar(&c.signRegion, "signing-region", "", "SigV4 region")
	fs.Var(&c.props, "prop", "catalog or file IO property key=value (repeatable)")
	return c
}

// apply overrides cfg's catalog settings with the flags that were given.
func (c *catalogFlags) apply(cfg *config.Config) error {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	cc := &cfg.Catalog
	set(&cc.Type, c.typ)
	set(&cc.Name, c.name)
	set(&cc.URI, c.uri)
	set(&cc.Warehouse, c.warehouse)
	set(&cc.ConfigFile, c.file)
	set(&cc.Credential, c.credential)
	set(&cc.Token, c.token)
	set(&cc.SQLDriver, c.driver)
	set(&cc.SQLDialect, c.dialect)
	set(&cc.SigningName, c.signName)
	set(&cc.SigningRegion, c.signRegion)
	if c.sigv4 {
		cc.SigV4 = true
	}
	if len(c.props) > 0 {
		p, err := catalogconfig.ParseProperties(strings.Join(c.props, ","))
		if err != nil {
			return exitError{code: 2, err: fmt.Errorf("--prop: %w", err)}
		}
		if cc.Properties == nil {
			cc.Properties = map[string]string{}
		}
		for k, v := range p {
			cc.Properties[k] = v
		}
	}
	return nil
}

// openCatalog reads the configuration (ICEKEEPER_* and the catalog flags),
// the AWS clients from the standard SDK configuration, and opens the
// catalog: what every command that reads or writes a table starts with.
// Unless create, a sqlite catalog file must already exist (a mistyped URI
// would otherwise create an empty catalog).
func (c *catalogFlags) openCatalog(ctx context.Context, create bool) (config.Config, catalog.Catalog, error) {
	cfg, err := c.envConfig()
	if err != nil {
		return cfg, nil, err
	}
	cfg.Catalog.MustExist = !create
	clients, err := awsclients.Load(ctx)
	if err != nil {
		return cfg, nil, err
	}
	cat, err := stages.OpenCatalog(ctx, cfg, clients)
	return cfg, cat, err
}

// deployment reads the ICEKEEPER_* settings and loads the AWS clients:
// what the commands that read a deployment's records (log, summary) use.
func deployment(ctx context.Context) (config.Config, *awsclients.Clients, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		return cfg, nil, exitError{code: 2, err: err}
	}
	clients, err := awsclients.Load(ctx)
	return cfg, clients, err
}

// envConfig reads the ICEKEEPER_* settings and applies the catalog flags.
func (c *catalogFlags) envConfig() (config.Config, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		return cfg, exitError{code: 2, err: err}
	}
	return cfg, c.apply(&cfg)
}

// addOutputFlags registers --json and iceberg-go's --output text|json, which
// mean the same; the returned flag is true for JSON.
func addOutputFlags(fs *flag.FlagSet, what string) *bool {
	asJSON := fs.Bool("json", false, "print "+what+" as JSON")
	fs.Func("output", "output format: text or json (as iceberg-go's CLI)", func(v string) error {
		switch strings.ToLower(v) {
		case "json":
			*asJSON = true
		case "text":
			*asJSON = false
		default:
			return fmt.Errorf("want text or json, got %q", v)
		}
		return nil
	})
	return asJSON
}

// jsonLogger returns a JSON logger on w, or one that discards when !on.
func jsonLogger(w io.Writer, on bool) *slog.Logger {
	if !on {
		w = io.Discard
	}
	return slog.New(slog.NewJSONHandler(w, nil))
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// cliMetrics sends the pipeline's EMF metric lines to w when on (stdout is
// for the command's own output), or nowhere.
func cliMetrics(w io.Writer, on bool) *metrics.Emitter {
	if !on {
		w = io.Discard
	}
	return metrics.NewEmitter(w, metrics.DefaultNamespace, nil)
}

// loadOneTable is the start of every read-only command on one table: pos
// must be exactly one table name (namespace.table); the catalog is opened
// without creating anything and the table loaded. cmd names the command in
// errors.
func (c *catalogFlags) loadOneTable(ctx context.Context, cmd string, pos []string) (string, config.Config, *table.Table, error) {
	if len(pos) != 1 {
		return "", config.Config{}, nil, exitError{code: 2, err: fmt.Errorf("%s takes one table (namespace.table), got %d arguments", cmd, len(pos))}
	}
	name := pos[0]
	ident, err := tableIdent(name)
	if err != nil {
		return name, config.Config{}, nil, err
	}
	cfg, cat, err := c.openCatalog(ctx, false)
	if err != nil {
		return name, cfg, nil, err
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return name, cfg, nil, fmt.Errorf("%s %s: no such table in the %s catalog %q: %w", cmd, name, cfg.Catalog.Type, cfg.Catalog.URI, err)
	}
	if err != nil {
		return name, cfg, nil, fmt.Errorf("%s %s: load table: %w", cmd, name, err)
	}
	return name, cfg, tbl, nil
}
