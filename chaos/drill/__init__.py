"""The drill and its scoreboard: every scenario through the real loop on throwaway copies (the demo estate per
seed, or an onboarded pipeline's scratch copy), what the loop made of each, and the scoreboard written out."""
