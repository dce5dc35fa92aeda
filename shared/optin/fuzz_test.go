package optin

import (
	"errors"
	"testing"
)

// FuzzProperties: any icekeeper.* property is accepted or rejected with
// ErrCredentialProperty or ErrBadProperty; never a panic, and a
// credential-shaped key is never accepted.
func FuzzProperties(f *testing.F) {
	for _, kv := range [][2]string{
		{PropertyEnabled, "true"}, {PropertyMinInterval, "30m"}, {PropertyOutputSpec, "input"},
		{"icekeeper.secret", "x"}, {PropertyMinInterval, "-1h"}, {PropertyOutputSpec, "-3"},
	} {
		f.Add(kv[0], kv[1])
	}
	f.Fuzz(func(t *testing.T, k, v string) {
		err := ValidateProperties(map[string]string{k: v})
		if err != nil && !errors.Is(err, ErrCredentialProperty) && !errors.Is(err, ErrBadProperty) {
			t.Fatalf("%s=%q: error %v of no known kind", k, v, err)
		}
		if err == nil && len(k) > len(Prefix) && k[:len(Prefix)] == Prefix && credentialShaped(k) {
			t.Fatalf("credential-shaped %q accepted", k)
		}
	})
}

// FuzzGrants: a grant list parses or fails with ErrBadGrant.
func FuzzGrants(f *testing.F) {
	for _, s := range []string{"sales", "sales.*", "a.b.*,c.d", "a..b", "*", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := ParseGrants(s); err != nil && !errors.Is(err, ErrBadGrant) {
			t.Fatalf("%q: error %v is not ErrBadGrant", s, err)
		}
	})
}
