// The experiments "Which heads carry the answer?" (patch-panel.js) offers: a clean and a corrupted
// text, the answer the clean one leads to and the distractor the corrupted one would.
/**
 * Experiments the shipped default model gets right (the answer ahead of the distractor by more than
 * a nat on the clean text: tests/e2e/patching.test.mjs checks it). The first is induction: a name
 * that repeats, corrupted to another name, which the model copies from its first mention.
 */
export const PRESETS = Object.freeze([
  {
    name: 'A name that repeats (induction)',
    clean: 'Mr. Smith left the room. Later, Mr.',
    corrupted: 'Mr. Jones left the room. Later, Mr.',
    answer: ' Smith',
    distractor: ' Jones',
    why: 'The model should repeat the name it saw: which heads carry " Smith" from its first mention to the end?',
  },
  {
    name: 'A list that repeats (induction)',
    clean: 'red green blue yellow red green blue',
    corrupted: 'red green blue black red green blue',
    answer: ' yellow',
    distractor: ' black',
    why: 'A repeated list predicts its own next item: the heads that look back to what followed "blue" last time.',
  },
  {
    name: 'A city named before',
    clean: 'The city of Boston is large. He lives in the city of',
    corrupted: 'The city of Denver is large. He lives in the city of',
    answer: ' Boston',
    distractor: ' Denver',
    why: 'The city the text named earlier comes back at the end.',
  },
  {
    name: 'A full name',
    clean: 'John Smith is a doctor. John Smith is a doctor. John',
    corrupted: 'John Brown is a doctor. John Brown is a doctor. John',
    answer: ' Smith',
    distractor: ' Brown',
    why: 'After "John" the model completes the surname it has seen twice.',
  },
]);
