package ops

import (
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
)

// CommitmentStory is everything linked to one commitment, in ledger order:
// what `memvault commitment show` prints.
type CommitmentStory struct {
	ID     string           `json:"id"`     // the commitment as first opened
	Latest string           `json:"latest"` // its version of record (the last supersede, or ID)
	Status string           `json:"status"` // of the version of record: active (open), closed, retracted, superseded
	Events []CommitmentStep `json:"events"`
}

// CommitmentStep is one event of a commitment's story and the part it
// plays: opened, superseded, closed, retracted, reopened (a close
// retracted), claim, reflection, decision, or linked (any other row that
// links it).
type CommitmentStep struct {
	Role string `json:"role"`
	*vault.Row
}

// CommitmentShow gathers the story of the commitment arg names (an id or
// a unique prefix; any version of a superseded one): its opening, the
// versions that replaced it, the claims, reflections, decisions and other
// rows that link any version, its closing, and the corrections of those
// corrections (a retracted close reopens it).
func CommitmentShow(st *vault.State, arg string) (*CommitmentStory, error) {
	id, err := st.ResolveEventID("commitment show", arg)
	if err != nil {
		return nil, err
	}
	r := st.Get(id)
	if r.EffectiveKind() != "commitment.open" {
		return nil, fault.New(vault.ErrInvalid, "commitment show %s: is a %s, not a commitment", id, r.Kind)
	}
	for r.Kind == "supersede" && len(r.Links) > 0 && st.Get(r.Links[0]) != nil {
		r = st.Get(r.Links[0]) // back to the first version
	}
	story := &CommitmentStory{ID: r.ID, Latest: r.ID, Events: []CommitmentStep{}}
	versions := map[string]bool{r.ID: true} // the commitment's versions
	corrections := map[string]string{}      // ids of its corrections, by role
	for _, row := range st.Rows {
		role := ""
		switch {
		case row.ID == r.ID:
			role = "opened"
		case len(row.Links) == 0:
		case vault.CorrectionKinds[vault.CanonicalKind(row.Kind)] && versions[row.Links[0]]:
			switch {
			case row.Kind == "supersede":
				role = "superseded"
				versions[row.ID] = true
				story.Latest = row.ID
			case row.Kind == "retract":
				role = "retracted"
			default:
				role = "closed"
			}
			corrections[row.ID] = role
		case row.Kind == "retract" && corrections[row.Links[0]] == "closed":
			role = "reopened"
		default:
			for _, l := range row.Links {
				if versions[l] {
					role = linkedRole(row)
					break
				}
			}
		}
		if role != "" {
			row.Status = st.Status(row)
			story.Events = append(story.Events, CommitmentStep{Role: role, Row: row})
		}
	}
	if story.Status = st.Status(st.Get(story.Latest)); story.Status == vault.StatusActive {
		story.Status = "open"
	}
	return story, nil
}

// linkedRole is the part a row that links a commitment plays in its story.
func linkedRole(r *vault.Row) string {
	switch k := r.EffectiveKind(); k {
	case "claim", "reflection", "decision":
		return k
	}
	return "linked"
}
