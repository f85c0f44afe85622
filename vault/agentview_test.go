package vault

import (
	"strings"
	"testing"
)

// Agent scope: an agent sees its own rows and the vault's own agent's,
// never a third agent's, in the heads it is shown and in recall; the
// vault's own agent sees every row.
func TestAgentScope(t *testing.T) {
	v := newVault(t)
	write := func(agent, text string) {
		t.Helper()
		if _, err := v.Update(TxOptions{Agent: agent}, func(tx *Tx) error {
			_, err := tx.Remember(Input{Kind: "constraint", Thread: "project:shop", Text: text})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	write(v.Config.Agent, "sharedzebra constraint")
	write("alpha", "alphazebra constraint")
	write("beta", "betazebra constraint")
	if _, err := v.Refresh(RefreshOptions{Memory: true, AllThreads: true}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		agent      string
		see, blind []string
	}{
		{v.Config.Agent, []string{"sharedzebra", "alphazebra", "betazebra"}, nil},
		{"alpha", []string{"sharedzebra", "alphazebra"}, []string{"betazebra"}},
		{"beta", []string{"sharedzebra", "betazebra"}, []string{"alphazebra"}},
		{"gamma", []string{"sharedzebra"}, []string{"alphazebra", "betazebra"}},
	} {
		heads, err := v.AgentHeads(c.agent, MemoryHead, "threads/project/shop.md", ContinuityHead)
		if err != nil {
			t.Fatal(err)
		}
		shown := string(heads[0]) + string(heads[1]) + string(heads[2])
		res, err := v.Recall(RecallOptions{Query: "constraint", Agent: c.agent, AllThreads: true, Tier: TierStructured, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var found []string
		for _, h := range res.Hits {
			found = append(found, h.Text)
		}
		hits := strings.Join(found, "\n")
		for _, w := range c.see {
			if !strings.Contains(string(heads[0]), w) || !strings.Contains(string(heads[1]), w) {
				t.Errorf("agent %s is not shown %s in its heads:\n%s", c.agent, w, shown)
			}
			if !strings.Contains(hits, w) {
				t.Errorf("agent %s does not recall %s: %s", c.agent, w, hits)
			}
		}
		for _, w := range c.blind {
			if strings.Contains(shown, w) {
				t.Errorf("agent %s is shown %s, another agent's row:\n%s", c.agent, w, shown)
			}
			if strings.Contains(hits, w) {
				t.Errorf("agent %s recalls %s, another agent's row", c.agent, w)
			}
		}
	}
}
