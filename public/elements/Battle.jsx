// A blind comparison: two answers side by side as A and B, a vote, then the reveal.
// Props come from backend/page/compare_view.py; votes go back through callAction("battle_vote").
import { useEffect, useState } from "react";
import { Button } from "@/components/ui/button";

const VOTES = [["a", "A is better"], ["b", "B is better"], ["tie", "Tie"], ["both_bad", "Both are bad"]];

function Side({ label, side, reveal }) {
  return (
    <div className="battle-side flex-1 min-w-0 rounded-md border p-3" data-side={label}>
      <div className="font-semibold mb-2">
        Answer {label}
        {reveal ? <span className="battle-name font-normal"> · {reveal.name}</span> : null}
      </div>
      {side.reasoning ? (
        <details className="battle-reasoning mb-2 text-sm opacity-80" open={!side.answer}>
          <summary>{side.answer ? "Reasoning" : "Thinking…"}</summary>
          <div className="whitespace-pre-wrap">{side.reasoning}</div>
        </details>
      ) : null}
      <div className="battle-answer whitespace-pre-wrap">{side.answer || (side.done ? "(no answer text)" : "…")}</div>
      {side.note ? <div className="battle-note mt-2 font-semibold">{side.note}</div> : null}
      {reveal ? (
        <div className="battle-reveal mt-2 text-sm opacity-80">
          {reveal.grade ? <div>{reveal.grade}</div> : null}
          <div><em>{reveal.stats}</em></div>
          <Button size="sm" variant="outline" className="battle-replay mt-1" data-answer-id={reveal.answer_id}
                  title={`Send answer ${label}'s stamped request again and compare (answer id ${reveal.answer_id})`}
                  onClick={() => callAction({ name: "replay", payload: {}, forId: reveal.answer_id })}>
            Replay {label}
          </Button>
        </div>
      ) : null}
    </div>
  );
}

export default function Battle() {
  const [reasons, setReasons] = useState([]);
  const [comment, setComment] = useState("");
  const [sent, setSent] = useState(false);
  const canVote = props.phase === "vote" && !sent;

  const vote = (choice) => {
    if (!canVote) return;
    setSent(true);
    callAction({ name: "battle_vote", payload: { battle_id: props.battle_id, vote: choice, reasons, comment } });
  };

  useEffect(() => {
    const onKey = (event) => {
      const typing = ["INPUT", "TEXTAREA"].includes(document.activeElement?.tagName);
      const choice = { 1: "a", 2: "b", 3: "tie", 4: "both_bad" }[event.key];
      if (!typing && choice && canVote && props.latest) vote(choice);
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  });

  const toggle = (reason) =>
    setReasons(reasons.includes(reason) ? reasons.filter((r) => r !== reason) : [...reasons, reason]);

  return (
    <div className="battle flex flex-col gap-3 w-full" data-phase={props.phase}>
      <div className="flex flex-row gap-3 w-full">
        {["A", "B"].map((label) => (
          <Side key={label} label={label} side={props.sides[label]} reveal={props.reveal && props.reveal[label]} />
        ))}
      </div>
      {props.phase === "streaming" ? <div className="text-sm opacity-70">Both answers are streaming…</div> : null}
      {canVote ? (
        <div className="battle-vote flex flex-col gap-2">
          <div className="flex flex-row flex-wrap gap-2">
            {VOTES.map(([choice, words], i) => (
              <Button key={choice} variant="outline" data-vote={choice} onClick={() => vote(choice)}>
                {i + 1} · {words}
              </Button>
            ))}
          </div>
          <div className="flex flex-row flex-wrap gap-2 text-sm">
            {props.reason_chips.map((reason) => (
              <Button key={reason} size="sm" variant={reasons.includes(reason) ? "default" : "ghost"}
                      data-reason={reason} onClick={() => toggle(reason)}>{reason}</Button>
            ))}
          </div>
          <input className="battle-comment rounded-md border p-2 text-sm bg-transparent" placeholder="Comment (optional)"
                 value={comment} onChange={(e) => setComment(e.target.value)} />
          <div className="text-xs opacity-60">Keys 1-4 vote. Names, stats and grades show after the vote.</div>
        </div>
      ) : null}
      {props.phase === "vote" && sent ? <div className="text-sm">Vote sent…</div> : null}
      {props.phase === "revealed" ? (
        <div className="battle-result font-semibold">
          Your vote: {props.vote_words}{props.reasons && props.reasons.length ? ` (${props.reasons.join(", ")})` : ""}
        </div>
      ) : null}
    </div>
  );
}
