package result

// Provenance says what produced a result: the code, the command and the
// knobs from the environment.
type Provenance struct {
	// Commit is the git commit of the working tree, and Dirty whether it
	// had uncommitted changes.
	Commit string `json:"commit,omitempty"`
	Dirty  bool   `json:"dirty"`
	// Command is a go test command that repeats the run.
	Command string `json:"command"`
	// Args is the test binary's exact command line.
	Args []string `json:"args"`
	// Env holds the knobs read from the environment (LOADTEST_*, RELAY_*,
	// USERS, DURATION, STEPS, RATE, SEED, …); names that look like secrets
	// are left out.
	Env map[string]string `json:"env,omitempty"`
}
