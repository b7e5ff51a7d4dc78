// The bench pages' inputs (imported by their workers from /common/): two texts of exactly T tokens of
// the package's tokenizer `model` that differ in their first token, so that running one after the
// other is a full run each time (never a reuse of a cached prefix), and their ids.
const PROSE =
  'the chef who trained in paris cooked the meal quickly while the guests waited in the garden and ' +
  'talked about the long summer, the river, the market and the old bridge near the station; ';

export function twoTexts(model, T) {
  const make = (first) => {
    let s = first;
    while (s.length < 8 * T) s += PROSE;
    const tokens = model.tokenize(s);
    const text = s.slice(0, tokens[T - 1].end);
    const ids = model.tokenize(text).map((t) => t.id);
    if (ids.length !== T) throw new Error(`a text of ${T} tokens came out with ${ids.length}`);
    return { text, ids };
  };
  const a = make('The'),
    b = make('A');
  if (a.ids[0] === b.ids[0]) throw new Error('the two texts start with the same token');
  return [a, b];
}
