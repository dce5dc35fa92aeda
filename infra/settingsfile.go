package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// DefaultSettingsFile is the committed file that holds a deployment's
// settings (the keys of ContextKeys), read by the app at every synth. Its
// values are CDK context: `cdk -c key=value` (or make's CDK_CONTEXT)
// overrides one for one run only, because context given on the command
// line takes precedence over the app's own (AppProps.Context). Edit the
// file, not the command line, so that a later `make deploy` deploys the
// same settings. ICEKEEPER_SETTINGS names another file.
const DefaultSettingsFile = "settings.json"

// SettingsFileEnv names the settings file to read instead.
const SettingsFileEnv = "ICEKEEPER_SETTINGS"

// readSettingsFile reads a settings file into context values. Unknown keys
// are refused, naming them, so that a misspelled setting is not silently
// ignored.
func readSettingsFile(path string) (map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("settings file: %w", err)
	}
	var ctx map[string]any
	if err := json.Unmarshal(raw, &ctx); err != nil {
		return nil, fmt.Errorf("settings file %s: %w", path, err)
	}
	var unknown []string
	for k := range ctx {
		if !contains(ContextKeys(), k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("settings file %s: unknown settings %s (see infra/README.md, \"Settings\")", path, strings.Join(unknown, ", "))
	}
	return ctx, nil
}

// Summary says, in a few lines, what a deployment with these settings may
// do: printed at every synth (so `make preview` shows it before a deploy)
// and recorded in the template's metadata.
func (s Settings) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "icekeeper: mode %s, catalog %s", s.Mode, s.CatalogType)
	if s.CatalogURI != "" {
		fmt.Fprintf(&b, " (%s)", s.CatalogURI)
	}
	b.WriteString("\n")
	if !s.TableAccess() {
		b.WriteString("  no table is granted: the functions get no table or catalog permission\n")
		return b.String()
	}
	fmt.Fprintf(&b, "  granted: %s\n", s.Grants)
	if _, widened, err := s.IAMScope(); err == nil && len(widened) > 0 {
		fmt.Fprintf(&b, "  IAM scope widened to the whole database for %d databases (too many tables for IAM's policy quotas; the functions still maintain only the granted tables): %s\n", len(widened), strings.Join(widened, ", "))
	}
	if tb, ok := s.TableBucket(); ok {
		fmt.Fprintf(&b, "  table bucket %s (S3 Tables): s3tables: permissions on the granted namespaces and tables; no object deletes (its unreferenced file removal removes failed attempts' files)\n", tb.ARN)
	}
	if locs, err := s.Locations(); err == nil {
		for _, l := range locs {
			fmt.Fprintf(&b, "  table location s3://%s/%s\n", l.Bucket, l.Key)
		}
	}
	switch s.Mode {
	case ModeActive:
		b.WriteString("  planner: reads the catalog and the granted locations\n")
		b.WriteString("  rewriters: read the granted locations, write and delete their own files under data/\n")
		b.WriteString("  committer: reads, writes metadata/, deletes under data/, and is the only one that commits to the catalog\n")
	default:
		b.WriteString("  planner: reads the catalog and the granted locations (advisory: nothing is written to a table)\n")
	}
	return b.String()
}
