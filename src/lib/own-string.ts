/**
 * A copy of a string that no longer keeps alive the text it was cut from. V8 represents a
 * substring (an XML attribute read from a piece of a streamed report, say) as a slice of its
 * parent, so one kept suite name pins the whole 64 KiB piece: run processing keeps a suite name
 * or a failure message per suite and per cause for the whole run, which pinned the entire report
 * (11 MiB for 40,000 cases). Concatenating makes a new string that slicing then flattens into
 * its own storage.
 */
export function ownString(value: string): string {
  return (" " + value).slice(1);
}
