/** Whether text holds a C0 control character or DEL: refused wherever users type one-line values (forms, URLs, names). */
export const hasControlCharacters = (value: string) => /[\u0000-\u001f\u007f]/.test(value);
