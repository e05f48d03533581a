// The review card: one question a graph paused on, with what it prepared and the answers it
// takes. The app owns its state (props); a click only asks the app to send the answer, and
// the app then updates the card: answered (decision and time), or pending with the graph's
// message when the graph refused the answer. Nothing here answers on its own.
import { Button } from "@/components/ui/button";
import { Textarea } from "@/components/ui/textarea";
import { useState } from "react";

function label(choice) {
  return choice.charAt(0).toUpperCase() + choice.slice(1);
}

export default function ReviewCard() {
  const [text, setText] = useState("");
  const [clicked, setClicked] = useState(false);
  const state = props.state || "pending";
  const busy = clicked || state === "sending";

  async function send(answer, always = false) {
    if (!answer.trim() || busy) return;
    setClicked(true);
    try {
      await callAction({
        name: "lgos_review",
        payload: {
          response_id: props.response_id,
          call_id: props.call_id,
          answer: answer.trim(),
          always,
        },
      });
    } finally {
      setClicked(false);
    }
  }

  const choices = props.choices || [];
  return (
    <div
      id={`review-${props.call_id}`}
      data-state={state}
      className="rounded-lg border-2 border-primary/40 bg-card p-4 flex flex-col gap-3 w-full"
    >
      <div className="text-xs font-semibold uppercase tracking-wide text-primary">
        {state === "answered" ? "Review answered" : "Waiting for your review"}
      </div>
      <div className="text-base font-semibold" data-role="question">{props.question}</div>
      {props.content ? (
        <div
          data-role="content"
          className="max-h-72 overflow-auto whitespace-pre-wrap rounded-md bg-muted p-3 text-sm"
        >
          {props.content}
        </div>
      ) : null}
      {props.error ? (
        <div role="alert" className="rounded-md border border-red-500 p-2 text-sm text-red-600">
          {props.error}
        </div>
      ) : null}
      {state === "answered" ? (
        <div data-role="decision" className="text-sm">
          Your answer: <strong>{props.decision}</strong>
          {props.answered_at ? ` · ${new Date(props.answered_at).toLocaleString()}` : ""}
        </div>
      ) : (
        <div className="flex flex-col gap-2">
          <div className="flex gap-2">
            {choices.map((choice, index) => (
              <Button
                key={choice}
                variant={index === 0 ? "default" : "outline"}
                disabled={busy}
                onClick={() => send(choice)}
              >
                {label(choice)}
              </Button>
            ))}
            {props.always ? (
              <Button variant="ghost" disabled={busy} onClick={() => send(props.always, true)}>
                {props.always_label}
              </Button>
            ) : null}
          </div>
          {props.free_text ? (
            <div className="flex gap-2 items-end">
              <Textarea
                aria-label="Your feedback"
                placeholder="Or write your own answer"
                value={text}
                disabled={busy}
                onChange={(event) => setText(event.target.value)}
              />
              <Button variant="secondary" disabled={busy || !text.trim()} onClick={() => send(text)}>
                Send feedback
              </Button>
            </div>
          ) : null}
          {busy ? <div className="text-xs text-muted-foreground">Sending your answer…</div> : null}
        </div>
      )}
    </div>
  );
}
